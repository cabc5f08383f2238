"""How the chat page renders a smart-reasoning stream, with the chat endpoint answered by a canned SSE body in
WeKnora's wire format (api §2) through Playwright's request routing; everything else is the real server.
Covers the step tree, a tool-approval prompt, the debug drawer's stage timings, keyboard use and a phone-sized
window — independent of which model the server has."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.web.conftest import KnoraServer, shot

CHUNK = {"id": "11111111-1111-4111-8111-111111111111",
         "content": "Ushant has the Créac'h light, automated in 1994.",
         "knowledge_id": "22222222-2222-4222-8222-222222222222",
         "knowledge_base_id": "33333333-3333-4333-8333-333333333333",
         "knowledge_title": "Ushant notes", "score": 0.81, "match_type": 0, "chunk_index": 0,
         "scores": {"vector": 0.62, "keyword": 0.4, "fused": 0.033, "rerank": 0.81}}


def frames(sid: str, mid: str) -> list[dict[str, Any]]:
    rid = "req-1"
    kb_tag = f'<kb doc="Ushant notes" chunk_id="{CHUNK["id"]}" kb_id="{CHUNK["knowledge_base_id"]}" />'
    return [
        {"id": rid, "response_type": "agent_query", "content": "", "done": True, "session_id": sid,
         "assistant_message_id": mid, "data": {"session_id": sid, "assistant_message_id": mid}},
        {"id": rid, "response_type": "thinking", "content": "The user asks about a date.", "done": False,
         "data": {"event_id": "e1-thinking"}},
        {"id": rid, "response_type": "thinking", "content": "", "done": True,
         "data": {"event_id": "e1-thinking", "duration_ms": 4}},
        {"id": rid, "response_type": "answer", "content": "I will check the notes first.", "done": False,
         "data": {"event_id": "e2-answer"}},
        {"id": rid, "response_type": "tool_call", "content": "Calling tool: knowledge_search", "done": False,
         "data": {"tool_call_id": "call-1", "tool_name": "knowledge_search",
                  "arguments": {"queries": ["Créac'h automated"]}}},
        {"id": rid, "response_type": "tool_result", "content": "", "done": False,
         "data": {"tool_call_id": "call-1", "tool_name": "knowledge_search", "success": True,
                  "output": "Found 1 chunk", "duration_ms": 9}},
        {"id": rid, "response_type": "references", "content": "", "done": False,
         "knowledge_references": [CHUNK],
         "data": {"references": [CHUNK]}},
        {"id": rid, "response_type": "tool_approval_required", "content": "Approval required", "done": True,
         "data": {"pending_id": "pend-1", "tool_name": "mcp_mail_send",
                  "arguments": {"to": "ops@example.org"}}},
        {"id": rid, "response_type": "debug", "content": "", "done": False, "data": {"stage": "retrieval",
                                                                                     "ms": 12.5, "kept": 1}},
        {"id": rid, "response_type": "debug", "content": "", "done": False, "data": {"stage": "rerank",
                                                                                     "ms": 3.25, "kept": 1}},
        {"id": rid, "response_type": "answer", "content": f"It was automated in **1994** {kb_tag}.",
         "done": False,
         "data": {"event_id": "e3-answer"}},
        {"id": rid, "response_type": "answer", "content": "", "done": True,
         "data": {"event_id": "e3-answer"}},
        {"id": rid, "response_type": "complete", "content": "", "done": True,
         "data": {"total_steps": 2, "total_duration_ms": 30}},
    ]


def sse(payloads: list[dict[str, Any]]) -> str:
    return "".join(f"event:message\ndata:{json.dumps(p, ensure_ascii=False)}\n\n" for p in payloads)


@pytest.fixture
def canned(server: KnoraServer) -> Callable[[Any], dict[str, Any]]:
    def install(page: Any) -> dict[str, Any]:
        seen: dict[str, Any] = {"chat": [], "approvals": []}

        def chat(route: Any) -> None:
            body = json.loads(route.request.post_data or "{}")
            seen["chat"].append({"url": route.request.url, "body": body})
            sid = route.request.url.rsplit("/", 1)[-1]
            route.fulfill(status=200, headers={"Content-Type": "text/event-stream;charset=utf-8"},
                          body=sse(frames(sid, "44444444-4444-4444-8444-444444444444")))

        def approval(route: Any) -> None:
            seen["approvals"].append({"url": route.request.url,
                                      "body": json.loads(route.request.post_data or "{}")})
            route.fulfill(status=200, content_type="application/json", body='{"success":true}')

        page.route("**/api/v1/agent-chat/*", chat)
        page.route("**/api/v1/knowledge-chat/*", chat)
        page.route("**/api/v1/agent/tool-approvals/*", approval)
        return seen

    return install


def test_step_tree_approval_and_debug_drawer(server: KnoraServer, canned: Callable[[Any], dict[str, Any]],
                                             new_page: Callable[..., Any]) -> None:
    page = new_page()
    seen = canned(page)
    page.goto(f"{server.base_url}/chat")
    # focus order in the composer: question → mode → web search → send
    page.focus("#chat-input")
    for target in ("#mode", "#web-search", "#send"):
        page.keyboard.press("Tab")
        expect(page.locator(target)).to_be_focused()
    page.select_option("#mode", "smart")
    page.focus("#web-search")
    page.keyboard.press("Space")
    expect(page.locator("#web-search")).to_be_checked()
    page.fill("#chat-input", "When was the light automated?")
    page.keyboard.press("Enter")
    answer = page.locator(".msg.assistant").last
    expect(answer).to_have_attribute("data-status", "complete")

    sent = seen["chat"][0]
    assert "/agent-chat/" in sent["url"]
    assert sent["body"]["agent_id"] == "builtin-smart-reasoning"
    assert sent["body"]["agent_enabled"] is True
    assert sent["body"]["web_search_enabled"] is True
    assert sent["body"]["query"] == "When was the light automated?"

    steps = answer.locator("details.steps")
    steps.locator("> summary").click()
    kinds = steps.locator(".steps-list > *").evaluate_all("els => els.map(e => e.className)")
    assert kinds == ["step thinking", "step preamble md", "step tool", "step approval"]
    tool = steps.locator("details.step.tool")
    assert tool.get_attribute("open") is None
    expect(tool.locator("summary")).to_have_text("Tool: knowledge_search ✓ · 9 ms")
    tool.locator("summary").click()
    expect(tool.locator("pre.args")).to_contain_text('"queries"')
    expect(tool.locator("pre.result")).to_have_text("Found 1 chunk")
    assert "check the notes" not in answer.locator(".answer").inner_text()
    expect(answer.locator(".answer strong")).to_have_text("1994")

    approval = steps.locator(".step.approval")
    expect(approval).to_contain_text("mcp_mail_send")
    approval.get_by_role("button", name="Approve").click()
    expect(approval).to_contain_text("Approved")
    assert seen["approvals"] == [{"url": f"{server.base_url}/api/v1/agent/tool-approvals/pend-1",
                                  "body": {"approved": True, "decision": "approve"}}]

    # keyboard: Tab reaches the citation marker, the popover opens on focus, Esc closes it
    marker = answer.locator("button.cite")
    marker.focus()
    pop = page.locator("#cite-popover")
    expect(pop).to_contain_text("Ushant notes")
    expect(pop).to_contain_text("0.810")
    page.keyboard.press("Escape")
    expect(pop).to_be_hidden()
    assert page.evaluate("document.activeElement.classList.contains('cite')"), "focus returns to the marker"

    answer.get_by_role("button", name="Debug").click()
    drawer = page.locator("#debug-drawer")
    rows = drawer.locator("table.timings tbody tr")
    expect(rows).to_have_count(2)
    assert rows.first.locator("td").all_inner_texts()[:3] == ["retrieval", "12.5", "1"]
    expect(drawer.locator("table.timings tfoot td.num")).to_have_text("15.8")
    score_cells = drawer.locator("table.scores tbody tr td.num").all_inner_texts()
    assert score_cells[:4] == ["0.6200", "0.4000", "0.0330", "0.8100"]
    shot(page, "chat-steps-approval-debug")
    page.keyboard.press("Escape")
    expect(drawer).to_be_hidden()


def test_narrow_window(server: KnoraServer, canned: Callable[[Any], dict[str, Any]],
                       new_page: Callable[..., Any]) -> None:
    server.api("POST", "/sessions", json={"title": "Earlier chat"})
    page = new_page(width=390, height=844, is_mobile=True, has_touch=True)
    canned(page)
    page.goto(f"{server.base_url}/chat")
    sidebar = page.locator("#sidebar")
    expect(page.locator("#burger")).to_be_visible()
    expect(sidebar).to_be_hidden()  # off-canvas, and out of the tab order
    page.locator("#burger").click()
    expect(sidebar).to_have_class("sidebar open")
    expect(sidebar.get_by_text("Earlier chat")).to_be_in_viewport()
    page.keyboard.press("Escape")
    expect(sidebar).not_to_have_class("sidebar open")

    page.fill("#chat-input", "When?")
    page.locator("#send").tap()
    answer = page.locator(".msg.assistant").last
    expect(answer).to_have_attribute("data-status", "complete")
    answer.locator("button.cite").tap()
    pop = page.locator("#cite-popover")
    expect(pop).to_be_visible()
    box = pop.bounding_box()
    assert box["x"] >= 0, "the popover fits the screen"
    assert box["x"] + box["width"] <= 390, "the popover fits the screen"
    assert page.evaluate("document.documentElement.scrollWidth") <= 390, "no horizontal scrolling"
    shot(page, "mobile-chat")
    page.locator(".thread").click(position={"x": 5, "y": 5})
    expect(pop).to_be_hidden()

    page.goto(f"{server.base_url}/kb")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    shot(page, "mobile-knowledge")


def test_mentions_scope_the_question(server: KnoraServer, canned: Callable[[Any], dict[str, Any]],
                                     new_page: Callable[..., Any]) -> None:
    kb = server.api("POST", "/knowledge-bases", json={"name": "Harbour"})
    other = server.api("POST", "/knowledge-bases", json={"name": "Unrelated"})
    doc = server.api("POST", f"/knowledge-bases/{kb['id']}/knowledge/manual",
                     json={"title": "Tide tables", "content": "High tide at 6.", "status": "publish"})
    page = new_page()
    seen = canned(page)
    page.goto(f"{server.base_url}/chat")
    box = page.locator("#chat-input")
    box.type("When is high tide @Tid")
    menu = page.locator("#mention-menu")
    expect(menu.get_by_role("option", name="Document Tide tables · Harbour")).to_be_visible()
    page.keyboard.press("Enter")  # picks the document; does not send
    expect(menu).to_be_hidden()
    expect(page.locator(".composer .chip")).to_have_text(["@Tide tables×"])
    assert box.input_value() == "When is high tide "
    box.type("@harb")
    expect(menu.get_by_role("option").first).to_contain_text("Harbour")
    page.keyboard.press("Enter")
    box.type("@Unrel")
    expect(menu).to_be_visible()
    page.keyboard.press("Escape")  # closes the menu, keeps the text
    expect(menu).to_be_hidden()
    box.fill("When is high tide?")
    page.get_by_role("button", name="Remove Unrelated from the scope").wait_for(state="detached")
    page.keyboard.press("Enter")
    expect(page.locator(".msg.assistant").last).to_have_attribute("data-status", "complete")
    body = seen["chat"][0]["body"]
    assert body["knowledge_ids"] == [doc["id"]]
    assert body["knowledge_base_ids"] == [kb["id"]]
    assert other["id"] not in body["knowledge_base_ids"]
    assert [(m["type"], m["name"]) for m in body["mentioned_items"]] == [("file", "Tide tables"), ("kb",
                                                                                                   "Harbour")]
    expect(page.locator(".msg.user .chip")).to_have_count(2)

    page.get_by_role("button", name="Remove Tide tables from the scope").click()
    page.get_by_role("button", name="Remove Harbour from the scope").click()
    page.fill("#chat-input", "And without scope?")
    page.keyboard.press("Enter")
    expect(page.locator(".msg.assistant").last).to_have_attribute("data-status", "complete")
    assert sorted(seen["chat"][1]["body"]["knowledge_base_ids"]) == sorted([kb["id"], other["id"]])
    assert seen["chat"][1]["body"]["knowledge_ids"] == []
