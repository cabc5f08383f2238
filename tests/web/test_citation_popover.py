"""Issue 18 in the browser: a citation of a passage merged from several chunks opens a popover with the cited
chunk's own text and the quoted sentence highlighted, and "Open document" scrolls to that chunk."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.fakes.model_server import FakeModelServer, Reply
from tests.web.chat_helpers import Director
from tests.web.conftest import KnoraServer, shot

PARAGRAPHS = ["The Phare du Créac'h stands on the island of Ushant, off Brittany.",
              "Its two lights are among the most powerful lighthouses in Europe.",
              "Keepers lived at the light until it was automated in 1994.",
              "A lighthouse museum opened in the old generator building."]
QUOTE = "Keepers lived at the light until it was automated in 1994."


@pytest.fixture
def director(fake_model: FakeModelServer) -> Director:
    return Director(fake_model)


def _seed(server: KnoraServer) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    kb = server.api("POST", "/knowledge-bases", json={
        "name": "Lighthouses", "chunking_config": {"chunk_size": 100, "chunk_overlap": 20}})
    doc = server.api("POST", f"/knowledge-bases/{kb['id']}/knowledge/manual",
                     json={"title": "Créac'h lighthouse", "content": "\n\n".join(PARAGRAPHS),
                           "status": "publish"})
    for _ in range(600):
        if server.api("GET", f"/knowledge/{doc['id']}")["parse_status"] in ("completed", "failed"):
            break
        time.sleep(0.1)
    chunks = server.api("GET", f"/chunks/{doc['id']}")
    assert len(chunks) == 4, chunks
    return doc, chunks


def test_popover_shows_the_cited_chunk_with_the_quote_highlighted_and_opens_it(
        server: KnoraServer, director: Director, new_page: Callable[..., Any]) -> None:
    doc, chunks = _seed(server)
    cited = next(c for c in chunks if QUOTE in c["content"])
    director.add(Reply(content=f'The light was automated: {QUOTE} <ref id="c1"/>', chunk_size=8))
    page = new_page()
    page.goto(f"{server.base_url}/chat")
    page.fill("#chat-input", "When was the Créac'h lighthouse automated?")
    page.press("#chat-input", "Enter")
    answer = page.locator(".msg.assistant").last
    expect(answer).to_have_attribute("data-status", "complete", timeout=30_000)

    answer.locator("button.cite").first.click()
    pop = page.locator("#cite-popover")
    expect(pop).to_be_visible()
    text = pop.locator(".pop-text")
    expect(text.locator("mark.pop-quote")).to_have_text(QUOTE)
    expect(text).to_have_text(cited["content"])  # the cited chunk, not the merged passage's first lines
    expect(text).not_to_contain_text("stands on the island of Ushant")
    link = pop.get_by_role("link", name="Open document")
    assert f"chunk={cited['id']}" in (link.get_attribute("href") or "")
    shot(page, "chat-citation-popover-quote")

    link.click()
    target = page.locator(f'li.chunk[data-chunk-id="{cited["id"]}"]')
    expect(target).to_have_class("chunk card chunk-target")
    expect(target).to_be_focused()
    expect(target).to_be_in_viewport()
    assert doc["id"] in page.url
    assert not page.js_errors
