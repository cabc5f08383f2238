"""Chat end to end against a real Knora server and the fake model: a streamed, cited answer with a working
citation popover, the references panel and debug drawer, stop, reload-and-resume without duplication, a
smart-reasoning turn with a tool call, and the session list."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.fakes.model_server import FakeModelServer, Reply
from tests.web.chat_helpers import Director, seed_kb
from tests.web.conftest import KnoraServer, shot

ANSWER = ("The **Phare du Créac'h** stands on Ushant <ref id=\"c1\"/>. "
          "It was automated in 1994 <ref id=\"c1\"/>.\n\n"
          "| fact | value |\n|---|---|\n| island | Ushant |")

# Records every distinct text of the streaming answer, so a test can see that it grew in steps.
RECORD_STREAM = """
window.__answerTexts = [];
new MutationObserver(() => {
  const el = document.querySelector('.msg.assistant[data-status="streaming"] .answer');
  if (el) { const t = el.textContent; const a = window.__answerTexts; if (a[a.length - 1] !== t) a.push(t); }
}).observe(document, {subtree: true, childList: true, characterData: true});
"""


@pytest.fixture
def director(fake_model: FakeModelServer) -> Director:
    return Director(fake_model)


def ask(page: Any, question: str) -> Any:
    page.fill("#chat-input", question)
    page.press("#chat-input", "Enter")
    return page.locator(".msg.assistant").last


def test_answer_streams_with_citation_popover(server: KnoraServer, director: Director,
                                              new_page: Callable[..., Any]) -> None:
    seeded = seed_kb(server)
    director.add(Reply(content=ANSWER, chunk_size=3, delay_per_chunk=0.02))
    page = new_page()
    page.add_init_script(RECORD_STREAM)
    page.goto(f"{server.base_url}/chat")
    answer = ask(page, "Where is the Créac'h lighthouse?")
    expect(answer).to_have_attribute("data-status", "complete", timeout=30_000)
    assert len(page.evaluate("window.__answerTexts")) >= 3, "the answer appeared in several steps"

    body = answer.locator(".answer")
    expect(body.locator("strong")).to_have_text("Phare du Créac'h")
    expect(body.locator("table td").first).to_have_text("island")
    markers = body.locator("button.cite")
    expect(markers).to_have_count(2)
    assert markers.all_inner_texts() == ["1", "1"]  # the same chunk keeps its number

    markers.first.hover()
    pop = page.locator("#cite-popover")
    expect(pop).to_be_visible()
    expect(pop.locator(".pop-title")).to_have_text("Créac'h lighthouse")
    expect(pop.locator(".pop-text")).to_contain_text("automated in 1994")
    expect(pop.locator(".pop-score")).to_contain_text("Score")
    link = pop.get_by_role("link", name="Open document")
    assert seeded["doc"]["id"] in (link.get_attribute("href") or "")
    shot(page, "chat-citation-popover")
    page.keyboard.press("Escape")
    expect(pop).to_be_hidden()

    markers.last.focus()  # keyboard users get the same popover
    expect(pop).to_be_visible()
    page.keyboard.press("Escape")
    expect(pop).to_be_hidden()

    refs = answer.locator("details.refs")
    expect(refs.locator("summary")).to_have_text("References (1)")
    refs.locator("summary").click()
    expect(refs.locator("li.cited .ref-n")).to_have_text("1")

    answer.get_by_role("button", name="Debug").click()
    drawer = page.locator("#debug-drawer")
    expect(drawer).to_be_visible()
    expect(drawer.locator("table.scores tbody tr")).to_have_count(1)
    expect(drawer.locator('td[data-score="fused"]').first).not_to_have_text("–")
    shot(page, "chat-debug-drawer")
    page.keyboard.press("Escape")
    expect(drawer).to_be_hidden()

    # the session got a title and is listed; the URL names it
    expect(page.locator(".session.current .session-name")).to_have_text("Lighthouse keepers", timeout=10_000)
    assert "/chat/" in page.url


def test_stop_turn(server: KnoraServer, director: Director, new_page: Callable[..., Any]) -> None:
    seed_kb(server)
    long = " ".join(f"Sentence {i} about the keepers." for i in range(200))
    director.add(Reply(content=long, chunk_size=4, delay_per_chunk=0.05))
    page = new_page()
    page.goto(f"{server.base_url}/chat")
    answer = ask(page, "Tell me everything about the keepers of the Créac'h lighthouse")
    expect(answer.locator(".answer")).to_contain_text("Sentence 1", timeout=30_000)
    stop = page.locator("#stop")
    expect(stop).to_be_enabled()
    stop.click()
    expect(answer).to_have_attribute("data-status", "stopped", timeout=30_000)
    expect(answer.locator(".turn-status")).to_have_text("Stopped by user.")
    expect(page.locator("#send")).to_be_visible()
    partial = answer.locator(".answer").inner_text()
    assert "Sentence 199" not in partial
    shot(page, "chat-stopped")
    page.reload()  # the stopped message is complete: history shows it, nothing resumes
    reloaded = page.locator(".msg.assistant")
    expect(reloaded).to_have_count(1)
    expect(reloaded.locator(".answer")).to_contain_text("Sentence 1")
    assert "Sentence 199" not in reloaded.locator(".answer").inner_text()


def test_reload_mid_stream_resumes_without_duplication(server: KnoraServer, director: Director,
                                                       new_page: Callable[..., Any]) -> None:
    seed_kb(server)
    words = [f"w{i:03d}" for i in range(120)]
    director.add(Reply(content=" ".join(words), chunk_size=5, delay_per_chunk=0.06))
    page = new_page()
    page.goto(f"{server.base_url}/chat")
    answer = ask(page, "List the keepers of the Créac'h lighthouse on Ushant")
    expect(answer.locator(".answer")).to_contain_text("w005", timeout=30_000)
    page.reload()
    resumed = page.locator(".msg.assistant")
    expect(resumed).to_have_count(1)
    expect(resumed).to_have_attribute("data-status", "streaming")  # continue-stream, replayed from offset 0
    shot(page, "chat-resumed-mid-stream")
    expect(resumed).to_have_attribute("data-status", "complete", timeout=60_000)
    text = resumed.locator(".answer").inner_text().split()
    assert text == words, "every word exactly once, in order"
    expect(page.locator(".msg.user")).to_have_count(1)


def test_smart_reasoning_turn_with_tool_call(server: KnoraServer, director: Director,
                                             new_page: Callable[..., Any]) -> None:
    seed_kb(server)
    director.add(
        Reply(content="Let me search the documents.",
              tool_calls=[{"name": "knowledge_search",
                           "arguments": {"queries": ["Créac'h lighthouse automated"]}}]),
        Reply(content="It was automated in 1994 <ref id=\"c1\"/>.", chunk_size=4))
    page = new_page()
    page.goto(f"{server.base_url}/chat")
    page.select_option("#mode", "smart")
    answer = ask(page, "When was the Créac'h lighthouse automated?")
    expect(answer).to_have_attribute("data-status", "complete", timeout=60_000)
    steps = answer.locator("details.steps")
    expect(steps).to_be_visible()
    steps.locator("> summary").click()
    tool = steps.locator("details.step.tool").first
    expect(tool.locator("summary")).to_contain_text("knowledge_search")
    expect(tool.locator("summary")).to_contain_text("✓")
    assert tool.get_attribute("open") is None, "tool steps are collapsed by default"
    tool.locator("summary").click()
    expect(tool.locator("pre.args")).to_contain_text("automated")
    expect(tool.locator("pre.result")).to_be_visible()
    expect(steps.locator(".step.preamble")).to_contain_text("Let me search the documents.")
    body = answer.locator(".answer")
    expect(body).to_contain_text("automated in 1994")
    assert "Let me search" not in body.inner_text(), "the preamble is moved out of the answer"
    expect(body.locator("button.cite")).to_have_count(1)
    assert director.answer_requests, "the agent offered tools"
    assert director.answer_requests[0].get("tools"), "the agent offered tools"
    shot(page, "chat-smart-reasoning")


def test_sessions_rename_pin_delete(server: KnoraServer, new_page: Callable[..., Any]) -> None:
    a = server.api("POST", "/sessions", json={"title": "Alpha"})
    server.api("POST", "/sessions", json={"title": "Beta"})
    page = new_page()
    page.goto(f"{server.base_url}/chat/{a['id']}")
    items = page.locator(".session-list .session")
    expect(items).to_have_count(2)
    for i in range(2):  # each session says when it was last used (today: a time of day)
        date = items.nth(i).locator("time.session-date")
        expect(date).to_have_text(re.compile(r"\d{1,2}\D\d{2}"))
        assert date.get_attribute("datetime")
    page.get_by_role("button", name="Rename: Alpha").click()
    page.fill("dialog input[name=title]", "Alpha renamed")
    page.keyboard.press("Enter")
    expect(page.locator(".session.current .session-name")).to_have_text("Alpha renamed")
    assert server.api("GET", f"/sessions/{a['id']}")["title"] == "Alpha renamed"
    page.get_by_role("button", name="Pin: Beta").click()
    expect(items.first).to_contain_text("Beta")
    expect(items.first).to_have_class("session pinned")
    page.get_by_role("button", name="Delete: Alpha renamed").click()
    page.locator("dialog").get_by_role("button", name="Delete").click()
    expect(items).to_have_count(1)
    expect(page).to_have_url(f"{server.base_url}/chat")


def test_history_loads_page_by_page(server: KnoraServer, director: Director, new_page: Callable[...,
                                                                                                Any]) -> None:
    session = server.api("POST", "/sessions", json={"title": "Long chat"})
    for i in range(11):
        director.add(Reply(content=f"answer number {i}"))
        with server.http.stream("POST", f"/knowledge-chat/{session['id']}",
                                json={"query": f"question {i}"}) as r:
            assert r.status_code == 200
            for _ in r.iter_lines():
                pass
    page = new_page()
    page.goto(f"{server.base_url}/chat/{session['id']}")
    msgs = page.locator("#messages > .msg")
    expect(msgs).to_have_count(20)  # the last page: limit=20
    expect(msgs.first).to_contain_text("question 1")
    earlier = page.get_by_role("button", name="Load earlier messages")
    expect(earlier).to_be_visible()
    earlier.click()
    expect(msgs).to_have_count(22)
    expect(msgs.first).to_contain_text("question 0")
    expect(msgs.nth(1)).to_contain_text("answer number 0")
    expect(msgs.last).to_contain_text("answer number 10")
    expect(earlier).to_be_hidden()


def test_session_list_pages(server: KnoraServer, new_page: Callable[..., Any]) -> None:
    for i in range(31):
        server.api("POST", "/sessions", json={"title": f"Chat {i:02d}"})
    page = new_page()
    page.goto(f"{server.base_url}/chat")
    items = page.locator(".session-list .session")
    expect(items).to_have_count(30)
    more = page.locator("#sidebar").get_by_role("button", name="Load more")
    more.click()
    expect(items).to_have_count(31)
    expect(more).to_be_hidden()
    titles = items.all_inner_texts()
    assert len({t.split("\n")[0] for t in titles}) == 31
