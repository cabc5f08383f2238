"""Knowledge pages end to end: create a KB, upload a document with progress, watch its parse status turn to
ready, open the chunk viewer and edit a chunk, and query the search playground."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from playwright.sync_api import expect

from tests.web.conftest import KnoraServer, require_routes, shot

DOC = """# Lighthouses of Brittany

The Phare du Créac'h on Ushant is among the most powerful lighthouses in Europe.
Its two white and black bands make it easy to recognise from the sea.

## Keepers

Keepers lived at the light until it was automated in 1994.
"""


def test_create_kb_upload_and_edit_chunk(server: KnoraServer, new_page: Callable[..., Any], tmp_path: Path) -> None:
    require_routes("knowledge_bases", "knowledge", "chunks")
    page = new_page()
    page.goto(f"{server.base_url}/kb")
    page.fill("#kb-name", "Lighthouses")
    page.fill("#kb-desc", "Notes about lighthouses")
    page.click("#kb-create button[type=submit]")
    expect(page.locator("h1")).to_have_text("Lighthouses")

    doc = tmp_path / "brittany.md"
    doc.write_text(DOC, encoding="utf-8")
    page.set_input_files("#upload-files", str(doc))
    row = page.locator("#doc-list tbody tr", has_text="brittany")
    expect(row).to_have_count(1)
    # the list polls parse_status until the ingestion job has finished
    expect(row).to_have_attribute("data-status", "completed", timeout=60_000)
    expect(row.locator(".badge")).to_have_text("Ready")
    shot(page, "knowledge-documents")

    row.locator("a").click()
    chunk = page.locator("#chunk-list .chunk").first
    expect(chunk).to_contain_text("Créac'h")
    chunk.get_by_role("button", name="Edit").click()
    editor = chunk.locator("textarea")
    editor.fill("The Phare du Créac'h is on Ushant. EDITED")
    chunk.get_by_role("button", name="Save").click()
    expect(chunk.locator(".chunk-text")).to_contain_text("EDITED")
    page.reload()
    expect(page.locator("#chunk-list .chunk").first).to_contain_text("EDITED")  # persisted by PUT /chunks/:kid/:cid
    shot(page, "knowledge-chunks")


def test_search_playground_shows_scores_by_path(server: KnoraServer, new_page: Callable[..., Any]) -> None:
    require_routes("knowledge_bases", "knowledge", "search")
    kb = server.api("POST", "/knowledge-bases", json={"name": "Ships"})
    server.api("POST", f"/knowledge-bases/{kb['id']}/knowledge/manual",
               json={"title": "Clipper ships", "content": "Clipper ships were fast sailing ships of the 19th century "
                                                        "that carried tea from China.", "status": "publish"})
    page = new_page()
    page.goto(f"{server.base_url}/kb/{kb['id']}")
    expect(page.locator("#doc-list tbody tr").first).to_have_attribute("data-status", "completed", timeout=60_000)
    page.goto(f"{server.base_url}/kb/{kb['id']}/search")
    page.fill("#search-q", "clipper ships tea")
    page.fill("#search-vt", "0")
    page.fill("#search-kt", "0")
    page.get_by_role("button", name="Search", exact=True).click()
    table = page.locator("#search-results table.scores")
    expect(table).to_be_visible()
    first = table.locator("tbody tr").first
    expect(first).to_contain_text("Clipper ships")
    fused = first.locator('td[data-score="fused"]').inner_text()
    assert fused != "–", "the fused score of a hybrid hit is shown"
    shot(page, "search-playground")
