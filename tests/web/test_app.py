"""The shell: serving the UI (SPA fallback without shadowing the API), sign-in, settings (models, key,
language)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from playwright.sync_api import expect

from knora.web.mount import STATIC_DIR, resolve_static
from tests.web.conftest import API_KEY, KnoraServer, shot


class TestMount:
    def test_client_routes_get_index_but_api_paths_do_not(self, server: KnoraServer) -> None:
        with httpx.Client(base_url=server.base_url) as http:
            for path in ("/", "/chat", "/chat/3f1c", "/kb/abc/doc/def", "/settings"):
                r = http.get(path)
                assert r.status_code == 200, path
                assert "text/html" in r.headers["content-type"], path
                assert '<script type="module" src="/js/app.js">' in r.text
            js = http.get("/js/app.js")
            assert js.status_code == 200
            assert "javascript" in js.headers["content-type"]
            assert http.get("/js/missing.js").status_code == 404
            for method, path in (("GET", "/api/v1/no-such-thing"), ("POST", "/api/v1/no-such-thing"),
                                 ("GET", "/api"), ("GET", "/healthz")):
                r = http.request(method, path)
                assert r.status_code == 404, (method, path)
                assert "<html" not in r.text.lower()
            assert http.get("/health").json() == {"status": "ok"}
            assert http.get("/openapi.json").json()["info"]["title"] == "Knora"
            assert http.get("/docs").status_code == 200

    def test_no_escape_from_the_static_dir(self, tmp_path: Path) -> None:
        assert resolve_static("../mount.py") is None
        assert resolve_static("js/../../mount.py") is None
        assert resolve_static("/etc/passwd") is None
        assert resolve_static("js") is None  # a directory
        assert resolve_static("js/app.js") == STATIC_DIR / "js" / "app.js"


def test_sign_in_with_api_key_when_auto_setup_is_refused(server: KnoraServer,
                                                         new_page: Callable[..., Any]) -> None:
    page = new_page()
    page.route("**/api/v1/auth/auto-setup", lambda route: route.fulfill(
        status=403, content_type="application/json",
                                                                        body='{"success":false,"error":{"code":1002,"message":"no"}}'))
    page.goto(f"{server.base_url}/settings")
    expect(page.locator("#login-name")).to_be_focused()  # the password form first (test_accounts.py)
    page.locator("#use-key").click()
    key = page.locator("#api-key")
    expect(key).to_be_focused()
    key.fill("sk-wrong")
    page.keyboard.press("Enter")
    expect(page.get_by_role("alert")).to_have_text("That key was not accepted.")
    shot(page, "login")
    key.fill(API_KEY)
    page.keyboard.press("Enter")
    expect(page.locator("h1")).to_have_text("Settings")  # back on the page that was asked for
    assert page.evaluate("localStorage.getItem('knora.apiKey')") == API_KEY
    page.reload()
    expect(page.locator("h1")).to_have_text("Settings")


def test_auto_setup_signs_in_silently(server: KnoraServer, new_page: Callable[..., Any]) -> None:
    page = new_page()
    page.goto(f"{server.base_url}/")
    expect(page).to_have_url(f"{server.base_url}/chat")
    expect(page.locator("#chat-input")).to_be_visible()
    assert page.evaluate("localStorage.getItem('knora.apiKey')")


def test_models_and_language(server: KnoraServer, new_page: Callable[..., Any]) -> None:
    page = new_page()
    page.goto(f"{server.base_url}/settings")
    form = page.locator("form.model-form")
    form.locator("input[name=name]").fill("my-chat-model")
    form.locator("select[name=type]").select_option("KnowledgeQA")
    form.locator("input[name=base_url]").fill("http://127.0.0.1:9/v1")
    form.locator("input[name=api_key]").fill("sk-secret")
    form.get_by_role("button", name="Add model").click()
    row = page.locator("li.model", has_text="my-chat-model")
    expect(row).to_have_count(1)
    models = server.api("GET", "/models")
    created = next(m for m in models if m["name"] == "my-chat-model")
    assert created["type"] == "KnowledgeQA"
    assert created["parameters"]["base_url"] == "http://127.0.0.1:9/v1"
    assert "sk-secret" not in str(created), "the API never echoes a model's key"

    row.get_by_role("button", name="Edit").click()
    edit = page.locator("form.model-form", has_text="Edit: my-chat-model")
    edit.locator("input[name=base_url]").fill("http://127.0.0.1:10/v1")
    edit.get_by_role("button", name="Save").click()
    expect(page.locator("li.model", has_text="my-chat-model")).to_contain_text("http://127.0.0.1:10/v1")

    page.locator("li.model", has_text="my-chat-model").get_by_role("button", name="Test connection").click()
    expect(page.locator("li.model", has_text="my-chat-model").get_by_role("status")).not_to_have_text("…")
    shot(page, "settings")
    page.locator("li.model", has_text="my-chat-model").get_by_role("button", name="Delete").click()
    page.locator("dialog").get_by_role("button", name="Delete").click()
    expect(page.locator("li.model", has_text="my-chat-model")).to_have_count(0)
    assert not [m for m in server.api("GET", "/models") if m["name"] == "my-chat-model"]

    page.get_by_role("radio", name="中文").check()
    expect(page.locator(".mainnav")).to_contain_text("对话")
    page.reload()
    expect(page.locator("h1")).to_have_text("设置")
    expect(page.locator("html")).to_have_attribute("lang", "zh-CN")
    page.goto(f"{server.base_url}/chat")
    expect(page.locator("#chat-input")).to_have_attribute(
        "placeholder", "输入问题…（Enter 发送，Shift+Enter 换行，@ 指定范围）")


def test_api_docs_render_offline(server: KnoraServer, new_page: Callable[..., Any]) -> None:
    """Swagger UI and ReDoc load nothing from another host: every request the pages send goes to the server
    (ReDoc's CDN logo is refused by the pages' CSP), and both render the API's operations."""
    for path, rendered in (("/docs", ".swagger-ui .opblock"), ("/redoc", "[data-section-id]")):
        page = new_page()
        foreign: list[str] = []

        def guard(route: Any, foreign: list[str] = foreign) -> None:  # a request CSP blocks never gets here
            if route.request.url.startswith(server.base_url):
                route.continue_()
            else:
                foreign.append(route.request.url)
                route.abort()

        page.route("**/*", guard)
        page.goto(server.base_url + path)
        # ReDoc lays out the whole document (over 200 operations) before its first section exists: on two
        # loaded cores that took longer than Playwright's default 5 s once (a render wait, not a timing check)
        expect(page.locator(rendered).first).to_be_visible(timeout=60_000)
        assert "Knora" in page.title()
        assert foreign == [], path
