"""Auto-setup hands a key only to Knora's own UI on this machine, and CORS is closed by default
(knora/api/same_origin.py, knora/api/cors.py; issue 20 item 1)."""

from __future__ import annotations

import httpx
import pytest
from starlette.datastructures import Headers

from knora.api.app import create_app
from knora.api.same_origin import auto_setup_refusal, host_name, is_same_origin
from knora.root import Services

SERVER = "http://127.0.0.1:8080"
AUTO_SETUP = f"{SERVER}/api/v1/auth/auto-setup"
UI_CALL = {"Content-Type": "application/json", "Origin": SERVER}  # what the UI's fetch sends


def app_client(c: Services, **settings: object) -> httpx.AsyncClient:
    """A client with no credentials over the app serving ``c``, with some settings changed."""
    app = create_app(c.settings.model_copy(update=settings), services=c)
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=SERVER, timeout=60)


def refusal(**headers: str) -> str | None:
    return auto_setup_refusal(Headers(headers), "http", "127.0.0.1")


class TestRules:
    def test_host_name(self) -> None:
        assert host_name("LocalHost:8080") == "localhost"
        assert host_name("[::1]:8080") == "::1"
        assert host_name("127.0.0.1") == "127.0.0.1"
        assert host_name("evil.example:8080") == "evil.example"

    def test_same_origin_compares_scheme_host_and_port(self) -> None:
        assert is_same_origin("http://127.0.0.1:8080", "http", "127.0.0.1:8080")
        assert is_same_origin("http://localhost", "http", "localhost:80")
        assert not is_same_origin("http://127.0.0.1:8081", "http", "127.0.0.1:8080")
        assert not is_same_origin("https://127.0.0.1:8080", "http", "127.0.0.1:8080")
        assert not is_same_origin("null", "http", "127.0.0.1:8080")
        assert not is_same_origin("http://127.0.0.1:8080.evil.example", "http", "127.0.0.1:8080")

    def test_the_ui_and_plain_local_clients_pass(self) -> None:
        assert refusal(host="127.0.0.1:8080", origin=SERVER, **{"content-type": "application/json"}) is None
        assert refusal(host="localhost:8080", **{"content-type": "application/json; charset=utf-8"}) is None
        assert refusal(host="[::1]:8080", **{"x-request-id": "r1"}) is None  # axios without a body
        # a dev server proxying /api with Host rewritten (Vite's changeOrigin): the browser says same-origin
        assert refusal(host="127.0.0.1:8080", origin="http://localhost:5173",
                       **{"sec-fetch-site": "same-origin", "content-type": "application/json"}) is None

    @pytest.mark.parametrize("headers", [
        {"host": "127.0.0.1:8080", "origin": "http://evil.example", "content-type": "application/json"},
        {"host": "127.0.0.1:8080", "origin": "http://localhost:5173", "sec-fetch-site": "same-site",
         "content-type": "application/json"},
        {"host": "127.0.0.1:8080", "origin": "null", "content-type": "application/json"},
        # DNS rebinding: same-origin in the browser's eyes
        {"host": "evil.example:8080", "origin": "http://evil.example:8080",
         "content-type": "application/json", "sec-fetch-site": "same-origin"},
        {"host": "127.0.0.1:8080", "origin": SERVER, "content-type": "text/plain"},  # a form-like POST
        {"host": "127.0.0.1:8080"},
    ])
    def test_refused(self, headers: dict[str, str]) -> None:
        assert refusal(**headers)

    def test_only_from_this_machine(self) -> None:
        headers = Headers({"host": "127.0.0.1:8080", "content-type": "application/json"})
        assert auto_setup_refusal(headers, "http", "192.168.1.20")


class TestAutoSetup:
    async def test_the_ui_same_origin_call_gets_a_key(self, sqlite_container: Services) -> None:
        async with app_client(sqlite_container) as http:
            r = await http.post(AUTO_SETUP, headers=UI_CALL, content="{}")
            assert r.status_code == 200, r.text
            token = r.json()["token"]
            me = await http.get("/api/v1/auth/me", headers={"Authorization": f"Bearer {token}"})
        assert me.status_code == 200
        assert "access-control-allow-origin" not in r.headers

    @pytest.mark.parametrize("headers", [
        {"Origin": "http://evil.example", "Content-Type": "application/json"},
        {"Origin": "http://evil.example", "Content-Type": "text/plain"},  # the curl
        {"Host": "evil.example", "Content-Type": "application/json"},
        {"Host": "evil.example:8080", "Origin": "http://evil.example:8080",
         "Content-Type": "application/json"},
        {"Content-Type": "text/plain"},
    ])
    async def test_cross_origin_gets_no_key(self, sqlite_container: Services,
                                            headers: dict[str, str]) -> None:
        async with app_client(sqlite_container, cors_origins=["*"]) as http:
            r = await http.post(AUTO_SETUP, headers=headers, content="{}")
        assert r.status_code == 403, r.text
        body = r.json()
        assert body["success"] is False
        assert body["error"]["code"] == 1002
        assert "token" not in r.text
        assert "access-control-allow-origin" not in r.headers

    async def test_no_preflight_is_answered(self, sqlite_container: Services) -> None:
        async with app_client(sqlite_container, cors_origins=["*"]) as http:
            r = await http.options(AUTO_SETUP, headers={
                "Origin": "http://evil.example", "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "content-type"})
        assert "access-control-allow-origin" not in r.headers


class TestCors:
    async def test_default_answers_no_foreign_origin(self, sqlite_container: Services) -> None:
        assert sqlite_container.settings.cors_origins == []
        async with app_client(sqlite_container) as http:
            get = await http.get("/api/v1/auth/config", headers={"Origin": "http://evil.example"})
            pre = await http.options("/api/v1/knowledge-bases", headers={
                "Origin": "http://evil.example", "Access-Control-Request-Method": "GET",
                "Access-Control-Request-Headers": "x-api-key"})
        assert get.status_code == 200
        assert "access-control-allow-origin" not in get.headers
        assert "access-control-allow-origin" not in pre.headers

    async def test_listed_origin_is_allowed(self, sqlite_container: Services) -> None:
        async with app_client(sqlite_container, cors_origins=["http://app.example"]) as http:
            r = await http.get("/api/v1/auth/config", headers={"Origin": "http://app.example"})
            login = await http.post("/api/v1/auth/login", json={"password": "x"},
                                    headers={"Origin": "http://app.example"})
        assert r.headers["access-control-allow-origin"] == "http://app.example"
        assert login.headers["access-control-allow-origin"] == "http://app.example"

    async def test_wildcard_is_never_sent_on_token_routes(self, sqlite_container: Services) -> None:
        async with app_client(sqlite_container, cors_origins=["*"]) as http:
            other = await http.get("/api/v1/auth/config", headers={"Origin": "http://evil.example"})
            login = await http.post("/api/v1/auth/login", json={"password": "x"},
                                    headers={"Origin": "http://evil.example"})
            refresh = await http.post("/api/v1/auth/refresh", json={"refreshToken": "x"},
                                      headers={"Origin": "http://evil.example"})
        assert other.headers["access-control-allow-origin"] == "*"
        assert "access-control-allow-origin" not in login.headers
        assert "access-control-allow-origin" not in refresh.headers
