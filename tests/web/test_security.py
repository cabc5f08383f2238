"""The UI under attack from its own content (issue 20 item 2): a ``javascript:`` link in a document, in the
model's answer, in a web reference or a citation stays plain text however it is disguised, and every page
carries a Content-Security-Policy that the UI itself never violates."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.fakes.model_server import FakeModelServer, Reply
from tests.web.chat_helpers import Director, seed_kb
from tests.web.conftest import KnoraServer

# Disguises a naive check misses and a browser still reads as a script URL.
HOSTILE_URLS = ["javascript:window.__pwned=1", "JaVaScRiPt:window.__pwned=1",
                "\x01javascript:window.__pwned=1", "\x00\x1fjavascript:window.__pwned=1",
                "\u200bjavascript:window.__pwned=1",
                "&#106;avascript:window.__pwned=1", "javascript&#58;window.__pwned=1",
                "&#x6A;avascript&colon;window.__pwned=1", "vbscript:msgbox(1)",
                "data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg=="]
HOSTILE_MD = "Read these:\n\n" + "\n".join(f"- [link {i}]({u})" for i, u in enumerate(HOSTILE_URLS)) + \
    "\n- [tab](java\tscript:window.__pwned=1)\n- [fine](https://example.org/ok)\n"

# Records CSP violations and console errors from the first script on.
RECORD_VIOLATIONS = """
window.__csp = [];
document.addEventListener('securitypolicyviolation',
  (e) => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));
"""

# Every attribute on the page whose value, stripped the way a browser strips a URL, starts with a script
# scheme, and every link whose resolved protocol is not http(s)/mailto.
LIVE_SCRIPT_LINKS = """() => {
  const bad = [];
  for (const el of document.body.querySelectorAll('*')) {  // the head's favicon is a data: URL
    for (const a of el.attributes) {
      const v = a.value.replace(/[\\u0000-\\u0020\\u007f-\\u009f\\u200b]/g, '').toLowerCase();
      if (/^(javascript|vbscript|data):/.test(v)) bad.push(el.tagName + ' ' + a.name + '=' + a.value);
    }
  }
  for (const a of document.querySelectorAll('a[href], area[href]')) {
    if (!['http:', 'https:', 'mailto:'].includes(a.protocol)) bad.push('protocol ' + a.protocol);
  }
  return bad;
}"""


@pytest.fixture
def director(fake_model: FakeModelServer) -> Director:
    return Director(fake_model)


def watch(page: Any) -> list[str]:
    """Console errors of ``page`` (a CSP refusal is logged as one)."""
    errors: list[str] = []
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.add_init_script(RECORD_VIOLATIONS)
    return errors


def test_script_links_in_a_document_and_its_answer_are_inert(server: KnoraServer, director: Director,
                                                             new_page: Callable[..., Any]) -> None:
    seeded = seed_kb(server, title="Hostile notes", content=HOSTILE_MD)
    director.add(Reply(content="Quoting the notes:\n\n" + HOSTILE_MD + "\n| a | b |\n|:-:|--:|\n| 1 | 2 |"))
    page = new_page()
    errors = watch(page)
    page.goto(f"{server.base_url}/chat")
    page.fill("#chat-input", "What do the notes link to?")
    page.press("#chat-input", "Enter")
    answer = page.locator(".msg.assistant").last
    expect(answer).to_have_attribute("data-status", "complete", timeout=30_000)
    body = answer.locator(".answer")
    expect(body).to_contain_text("link 0")
    expect(body).to_contain_text("link 9")
    expect(body.get_by_role("link", name="fine")).to_have_attribute("href", "https://example.org/ok")
    assert body.locator("a").count() == 1, body.inner_html()
    expect(body.locator("td.align-center")).to_have_text("1")
    answer.get_by_role("button", name="Debug").click()  # the drawer's bars are styled through the CSSOM
    expect(page.locator("#debug-drawer")).to_be_visible()
    page.keyboard.press("Escape")
    assert page.evaluate(LIVE_SCRIPT_LINKS) == []

    # the chunk viewer shows the document's text as text
    page.goto(f"{server.base_url}/kb/{seeded['kb']['id']}/doc/{seeded['doc']['id']}")
    chunk = page.locator(".chunk-text").first
    expect(chunk).to_contain_text("[link 0](javascript:window.__pwned=1)")
    assert page.locator("#chunk-list a").count() == 0
    assert page.evaluate(LIVE_SCRIPT_LINKS) == []
    assert page.evaluate("window.__pwned") is None
    assert page.evaluate("window.__csp") == []
    assert not [e for e in errors if "Content Security Policy" in e], errors


def _sse(payloads: list[dict[str, Any]]) -> str:
    return "".join(f"event:message\ndata:{json.dumps(p)}\n\n" for p in payloads)


def test_script_urls_in_web_references_and_citations_are_inert(server: KnoraServer,
                                                               new_page: Callable[..., Any]) -> None:
    """A web search result and a ``<web url>`` citation carry URLs from the open web, not from Knora."""
    hostile = "\x01JavaScript:window.__pwned=1"
    ref = {"id": "w1", "content": "from the web", "knowledge_title": "Evil page", "knowledge_source": hostile,
           "chunk_type": "web_search", "match_type": 7, "score": 0.5, "metadata": {"url": hostile}}

    def chat(route: Any) -> None:
        sid = route.request.url.rsplit("/", 1)[-1]
        route.fulfill(status=200, headers={"Content-Type": "text/event-stream"}, body=_sse([
            {"id": "r", "response_type": "agent_query", "content": "", "done": True, "session_id": sid,
             "assistant_message_id": "m1", "data": {"session_id": sid, "assistant_message_id": "m1"}},
            {"id": "r", "response_type": "references", "content": "", "knowledge_references": [ref],
             "data": {"references": [ref]}},
            {"id": "r", "response_type": "answer", "done": False,
             "content": f'See <web url="{hostile}" title="Evil page" />.', "data": {"event_id": "a1"}},
            {"id": "r", "response_type": "answer", "content": "", "done": True, "data": {"event_id": "a1"}},
            {"id": "r", "response_type": "complete", "content": "", "done": True, "data": {}}]))

    page = new_page()
    page.route("**/api/v1/knowledge-chat/*", chat)
    page.route("**/api/v1/agent-chat/*", chat)
    page.goto(f"{server.base_url}/chat")
    page.fill("#chat-input", "Search the web")
    page.press("#chat-input", "Enter")
    answer = page.locator(".msg.assistant").last
    expect(answer).to_have_attribute("data-status", "complete")
    refs = answer.locator("details.refs")
    refs.locator("summary").click()
    expect(refs).to_contain_text("Evil page")
    answer.locator("button.cite").click()
    pop = page.locator("#cite-popover")
    expect(pop).to_be_visible()
    expect(pop.locator(".pop-link")).to_contain_text("JavaScript:")
    assert page.evaluate(LIVE_SCRIPT_LINKS) == []


def test_ui_pages_carry_a_csp_they_do_not_violate(server: KnoraServer, new_page: Callable[..., Any]) -> None:
    kb = server.api("POST", "/knowledge-bases", json={"name": "Harbour"})
    page = new_page()
    errors = watch(page)
    response = page.goto(f"{server.base_url}/chat")
    csp = response.headers["content-security-policy"]
    for directive in ("script-src 'self'", "connect-src 'self'", "object-src 'none'", "base-uri 'self'",
                      "frame-ancestors 'none'"):
        assert directive in csp
    assert "unsafe-inline" not in csp
    assert "unsafe-eval" not in csp
    expect(page.locator("#chat-input")).to_be_visible()  # signed in silently (auto-setup, same-origin)
    for path in ("/kb", f"/kb/{kb['id']}", f"/kb/{kb['id']}/settings", "/settings", "/team", "/keys"):
        page.goto(f"{server.base_url}{path}")
        expect(page.locator("h1").first).to_be_visible()
    assert page.evaluate("window.__csp") == []
    assert not [e for e in errors if "Content Security Policy" in e], errors
    # the static assets carry the policy too (a module opened on its own is a document)
    assert "frame-ancestors 'none'" in server.http.get(f"{server.base_url}/js/app.js").headers[
        "content-security-policy"]
    # the recorder does see a violation: an inline style attribute is refused
    page.evaluate("document.body.setAttribute('style', 'outline: 1px solid red')")
    page.wait_for_function("window.__csp.length > 0")
