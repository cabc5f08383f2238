"""Knowledge pages end to end: create a KB, upload a document with progress, watch its parse status turn to
ready, open the chunk viewer and edit a chunk, and query the search playground."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from playwright.sync_api import expect

from tests.web.conftest import KnoraServer, shot

DOC = """# Lighthouses of Brittany

The Phare du Créac'h on Ushant is among the most powerful lighthouses in Europe.
Its two white and black bands make it easy to recognise from the sea.

## Keepers

Keepers lived at the light until it was automated in 1994.
"""


def test_create_kb_upload_and_edit_chunk(server: KnoraServer, new_page: Callable[..., Any],
                                         tmp_path: Path) -> None:
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
    # persisted by PUT /chunks/:kid/:cid
    expect(page.locator("#chunk-list .chunk").first).to_contain_text("EDITED")
    shot(page, "knowledge-chunks")


def test_search_playground_shows_scores_by_path(server: KnoraServer, new_page: Callable[..., Any]) -> None:
    kb = server.api("POST", "/knowledge-bases", json={"name": "Ships"})
    server.api("POST", f"/knowledge-bases/{kb['id']}/knowledge/manual",
               json={"title": "Clipper ships",
                     "content": "Clipper ships were fast sailing ships of the 19th century "
                                                        "that carried tea from China.", "status": "publish"})
    page = new_page()
    page.goto(f"{server.base_url}/kb/{kb['id']}")
    expect(page.locator("#doc-list tbody tr").first).to_have_attribute("data-status", "completed",
                                                                       timeout=60_000)
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


def test_folder_upload_manual_entry_and_failure_reason(server: KnoraServer, new_page: Callable[..., Any],
                                                       tmp_path: Path) -> None:
    kb = server.api("POST", "/knowledge-bases", json={"name": "Folder KB"})
    folder = tmp_path / "handbook"
    (folder / "ops").mkdir(parents=True)
    (folder / "intro.txt").write_text("Welcome to the handbook. The harbour opens at dawn.", encoding="utf-8")
    (folder / "ops" / "tides.md").write_text("# Tides\n\nHigh tide is twice a day.", encoding="utf-8")
    (folder / "ops" / "broken.pdf").write_bytes(b"%PDF-1.4 this is not really a pdf")
    (folder / "ops" / "NOTES").write_text("Night shifts end at six.", encoding="utf-8")  # no extension: text
    (folder / "ops" / "tool.exe").write_bytes(b"MZ\x90\x00\x03" + bytes(200))  # refused at upload
    page = new_page()
    page.goto(f"{server.base_url}/kb/{kb['id']}")
    page.set_input_files("#upload-folder", str(folder))
    refused = page.locator(".upload-queue li.failed", has_text="tool.exe")
    expect(refused).to_contain_text("✗ handbook/ops/tool.exe")  # not "Uploading …" once it failed
    expect(refused).to_contain_text("Unsupported file type .exe")
    expect(refused.locator("progress")).to_have_count(0)
    rows = page.locator("#doc-list tbody tr")
    expect(rows).to_have_count(4, timeout=30_000)
    expect(page.locator("#doc-list tbody tr[data-status=completed]")).to_have_count(3, timeout=60_000)
    failed = page.locator("#doc-list tbody tr[data-status=failed]")
    expect(failed).to_have_count(1, timeout=60_000)
    expect(failed).to_contain_text("broken")
    reason = failed.locator(".fail-reason")
    expect(reason).not_to_be_empty()  # the parser's error message is shown next to the document
    names = sorted((d.get("file_name") or d.get("title") or "") for d in
                   server.api("GET", f"/knowledge-bases/{kb['id']}/knowledge"))
    assert len(names) == 4, names
    assert any("tides" in n for n in names), names
    assert "NOTES" in names, names

    page.locator("details.card > summary", has_text="Write an entry").click()
    page.fill("#manual-title", "Harbour rules")
    page.fill("#manual-content", "Boats must moor at the east quay.")
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#doc-list tbody tr", has_text="Harbour rules")).to_have_attribute(
        "data-status", "completed", timeout=60_000)
    shot(page, "knowledge-folder-upload")


def test_faq_entries_editor(server: KnoraServer, new_page: Callable[..., Any]) -> None:
    page = new_page()
    page.goto(f"{server.base_url}/kb")
    page.fill("#kb-name", "Support FAQ")
    page.select_option("#kb-type", "faq")
    page.click("#kb-create button[type=submit]")
    page.get_by_role("link", name="FAQ", exact=True).click()
    page.fill("#faq-q", "How do I reset my password?")
    page.fill("#faq-sim", "forgot password\nlost password")
    page.fill("#faq-ans", "Use the reset link on the sign-in page.")
    page.get_by_role("button", name="Create").click()
    entry = page.locator(".card.faq", has_text="How do I reset my password?")
    expect(entry).to_contain_text("forgot password · lost password")
    entry.get_by_role("button", name="Edit").click()
    entry = page.locator(".card.faq").first
    entry.locator("textarea").last.fill("Use the reset link on the sign-in page.\nOr ask an admin.")
    entry.get_by_role("button", name="Save").click()
    entry = page.locator(".card.faq", has_text="How do I reset my password?")
    expect(entry).to_contain_text("Or ask an admin.")
    shot(page, "knowledge-faq")
    entry.get_by_role("button", name="Delete").click()
    page.locator("dialog").get_by_role("button", name="Delete").click()
    expect(page.locator(".card.faq")).to_have_count(0)


def test_kb_settings_and_delete(server: KnoraServer, new_page: Callable[..., Any]) -> None:
    kb = server.api("POST", "/knowledge-bases", json={"name": "Draft KB"})
    saved_before = server.api("GET", f"/knowledge-bases/{kb['id']}")
    assert saved_before["embedding_model_id"]  # the settings page shows it, not an empty choice
    doc = server.api("POST", f"/knowledge-bases/{kb['id']}/knowledge/manual",
                     json={"title": "Scratch", "content": "to be removed", "status": "publish"})
    page = new_page()
    page.goto(f"{server.base_url}/kb/{kb['id']}")
    row = page.locator("#doc-list tbody tr", has_text="Scratch")
    row.get_by_role("button", name="Delete Scratch").click()
    page.locator("dialog").get_by_role("button", name="Delete").click()
    expect(page.locator("#doc-list tbody tr", has_text="Scratch")).to_have_count(0, timeout=30_000)
    assert all(d["id"] != doc["id"] for d in server.api("GET", f"/knowledge-bases/{kb['id']}/knowledge"))

    page.get_by_role("link", name="Settings", exact=True).last.click()
    expect(page.get_by_label("Embedding model")).to_have_value(saved_before["embedding_model_id"])
    expect(page.get_by_label("Chat model")).to_have_value(saved_before["summary_model_id"])
    page.fill("#kbs-name", "Final KB")
    page.fill("#kbs-size", "300")
    page.fill("#kbs-overlap", "40")
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#toast")).to_have_text("Saved.")
    saved = server.api("GET", f"/knowledge-bases/{kb['id']}")
    assert saved["name"] == "Final KB"
    assert (saved["chunking_config"]["chunk_size"], saved["chunking_config"]["chunk_overlap"]) == (300, 40)
    shot(page, "knowledge-settings")
    page.locator(".danger-zone").get_by_role("button", name="Delete").click()
    page.locator("dialog").get_by_role("button", name="Delete").click()
    expect(page).to_have_url(f"{server.base_url}/kb")
    expect(page.get_by_text("No knowledge bases yet.")).to_be_visible()


def _deck_with_picture() -> bytes:
    import io

    from PIL import Image
    from pptx import Presentation
    from pptx.util import Inches

    picture = io.BytesIO()
    Image.new("RGB", (320, 200), "teal").save(picture, "PNG")
    deck = Presentation()
    for n, title in enumerate(("Overview", "Architecture"), start=1):
        slide = deck.slides.add_slide(deck.slide_layouts[5])
        slide.shapes.title.text = title
        if n == 2:
            slide.shapes.add_picture(io.BytesIO(picture.getvalue()), Inches(1), Inches(2))
            slide.notes_slide.notes_text_frame.text = "The diagram shows the gateway."
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


def test_chunk_viewer_shows_the_slide_and_the_picture(server: KnoraServer,
                                                       new_page: Callable[..., Any]) -> None:
    import json
    import time

    kb = server.api("POST", "/knowledge-bases", json={"name": "Decks"})["id"]
    doc = server.api("POST", f"/knowledge-bases/{kb}/knowledge/file",
                     files={"file": ("deck.pptx", _deck_with_picture())},
                     data={"process_config": json.dumps({"parser_engine_overrides": {"ocr": "false"}})})
    for _ in range(600):
        if server.api("GET", f"/knowledge/{doc['id']}")["parse_status"] not in ("pending", "processing"):
            break
        time.sleep(0.1)
    assert server.api("GET", f"/knowledge/{doc['id']}")["parse_status"] == "completed"
    page = new_page()
    page.goto(f"{server.base_url}/kb/{kb}/doc/{doc['id']}")
    second = page.locator("#chunk-list .chunk", has_text="Architecture")
    expect(second.locator(".chunk-location")).to_have_text("slide 2")
    expect(page.locator("#chunk-list .chunk", has_text="Overview").locator(".chunk-location")).to_have_text(
        "slide 1")
    image = second.locator("img.chunk-image")
    expect(image).to_have_attribute("src", re.compile(r"^blob:"))  # fetched with the API key
    image.scroll_into_view_if_needed()
    page.wait_for_function("img => img.complete && img.naturalWidth > 0", arg=image.element_handle())
    assert image.evaluate("img => img.naturalWidth") == 320
    shot(page, "knowledge-chunk-slide")


def test_a_large_document_shows_its_embedding_progress(server: KnoraServer,
                                                       new_page: Callable[..., Any]) -> None:
    """The list renders ``metadata.progress`` of a document still processing. The server's job is too fast
    here (hashing embedder) to be caught mid-way, so the real list response is altered on its way to the page
    — the server side of the figure is tested in tests/services/ingest/test_progress.py."""
    kb = server.api("POST", "/knowledge-bases", json={"name": "Big"})
    server.api("POST", f"/knowledge-bases/{kb['id']}/knowledge/manual",
               json={"title": "Big manual", "content": "Some text.", "status": "publish"})
    page = new_page()

    def processing(route: Any) -> None:
        body = route.fetch().json()
        for doc in body["data"]:
            doc["parse_status"] = "processing"
            doc["metadata"] = {**(doc.get("metadata") or {}), "progress": {
                "stage": "embedding", "done": 12400, "total": 150000,
                "started_at": "2026-12-07T10:00:00Z", "eta_seconds": 7800}}
        route.fulfill(json=body)

    page.route(re.compile(r".*/api/v1/knowledge-bases/[^/]+/knowledge\?.*"), processing)
    page.goto(f"{server.base_url}/kb/{kb['id']}")
    note = page.locator("#doc-list .doc-progress")
    expect(note).to_contain_text("Embedding 12,400 / 150,000")
    expect(note).to_contain_text("2 h 10 min left")
    expect(note.locator("progress")).to_have_attribute("value", "12400")
