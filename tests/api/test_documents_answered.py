"""Issue 15's "done when", end to end over HTTP: a question whose answer is only in a scanned page, only in a
slide's notes, or only in a table of a PDF is answered with a citation that names the page or slide.

Real files made here (reportlab, Pillow, python-pptx), uploaded through the API, parsed by the product's
default runner (worker processes, OCR by the real engine), answered by the extractive answerer (no model).
"""

from __future__ import annotations

import io
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest

from knora.root import Services
from knora.settings import Settings
from tests.conftest import client_for, started
from tests.fakes.scans import scan_png
from tests.services.streaming.sse import parse_sse

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def _report_pdf() -> bytes:
    """Page 1: prose. Page 2: a scanned page (an image, no text layer). Page 3: a ruled table."""
    from reportlab.lib import colors
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.lib.utils import ImageReader
    from reportlab.platypus import Image, PageBreak, Paragraph, SimpleDocTemplate, Table, TableStyle

    styles = getSampleStyleSheet()
    scan = scan_png(["Service agreement, annex B.",
                     "The warranty period for the X200 pump is 36 months from delivery."],
                    height_in=3.0)
    reader = ImageReader(io.BytesIO(scan))
    w, h = reader.getSize()
    out = io.BytesIO()
    doc = SimpleDocTemplate(out, pagesize=A4, title="Annual operations report")
    table = Table([["Region", "Revenue 2025"], ["Nordics", "4.2 million EUR"], ["Iberia", "3.1 million EUR"],
                   ["Benelux", "2.7 million EUR"]])
    table.setStyle(TableStyle([("GRID", (0, 0), (-1, -1), 0.5, colors.black)]))
    doc.build([
        Paragraph("Annual operations report", styles["Title"]),
        Paragraph("This report covers the operations of the pump division in 2025. Deliveries rose "
                  "steadily and the service team grew to forty engineers.", styles["Normal"]),
        PageBreak(),
        Image(io.BytesIO(scan), width=440, height=440 * h / w),
        PageBreak(),
        Paragraph("Revenue by region", styles["Heading2"]),
        table,
    ])
    return out.getvalue()


def _roadmap_pptx() -> bytes:
    from pptx import Presentation

    deck = Presentation()
    for title, body, notes in [
        ("Project Heron", "A new pump controller for the X200 line.", ""),
        ("Timeline", "Design, pilot, launch.", "The launch date of project Heron is 14 May 2027."),
        ("Team", "Four engineers and one designer.", ""),
    ]:
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = title
        slide.placeholders[1].text = body
        if notes:
            slide.notes_slide.notes_text_frame.text = notes
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


@pytest.fixture
async def container(make_settings: Callable[..., Settings]) -> AsyncIterator[Services]:
    async with started(make_settings(parse_isolation="process", parse_workers=1)) as c:
        yield c


async def _ask(http: httpx.AsyncClient, kb: str, question: str) -> tuple[str, list[dict[str, Any]]]:
    sid = (await http.post("/api/v1/sessions", json={})).json()["data"]["id"]
    r = await http.post(f"/api/v1/knowledge-chat/{sid}", json={"query": question, "knowledge_base_ids": [kb]})
    s = parse_sse(r.content)
    return s.answer(), s.of("references")[0]["knowledge_references"]


async def test_scanned_page_slide_notes_and_pdf_table_are_answered_with_page_citations(
        container: Services) -> None:
    async with client_for(container) as http:
        kb = (await http.post("/api/v1/knowledge-bases", json={"name": "Ops"})).json()["data"]["id"]
        for name, data in (("report.pdf", _report_pdf()), ("roadmap.pptx", _roadmap_pptx())):
            r = await http.post(f"/api/v1/knowledge-bases/{kb}/knowledge/file", files={"file": (name, data)})
            assert r.status_code == 200, r.text
        await container.jobs.wait_idle(240)
        docs = (await http.get(f"/api/v1/knowledge-bases/{kb}/knowledge")).json()["data"]
        assert {d["file_name"]: d["parse_status"] for d in docs} == {"report.pdf": "completed",
                                                                     "roadmap.pptx": "completed"}, docs

        answer, _refs = await _ask(http, kb, "How long is the warranty period for the X200 pump?")
        assert "36 months" in answer
        assert 'page="p. 2"' in answer

        answer, _refs = await _ask(http, kb, "When is the launch date of project Heron?")
        assert "14 May 2027" in answer
        assert 'page="slide 2"' in answer

        answer, refs = await _ask(http, kb, "What was the revenue in the Nordics?")
        assert "4.2 million EUR" in answer
        assert 'page="p. 3"' in answer
        cited = answer.split('chunk_id="')[1].split('"')[0]
        chunk = next(r for r in refs if r["id"] == cited)
        assert "| Nordics | 4.2 million EUR |" in chunk["content"]  # the table came out as a Markdown table
        assert chunk["chunk_metadata"]["page"] == 3


async def test_a_scanned_page_with_ocr_off_is_named_as_left_out(container: Services) -> None:
    import json

    async with client_for(container) as http:
        kb = (await http.post("/api/v1/knowledge-bases", json={"name": "NoOcr"})).json()["data"]["id"]
        cfg = {"parser_engine_overrides": {"ocr": "false"}}
        r = await http.post(f"/api/v1/knowledge-bases/{kb}/knowledge/file",
                            files={"file": ("report.pdf", _report_pdf())},
                            data={"process_config": json.dumps(cfg)})
        assert r.status_code == 200, r.text
        await container.jobs.wait_idle(240)
        doc = (await http.get(f"/api/v1/knowledge/{r.json()['data']['id']}")).json()["data"]
        assert doc["parse_status"] == "completed"
        skipped = doc["metadata"]["parse_skipped"]
        assert any("2" in s and "OCR" in s for s in skipped), skipped
        chunks = (await http.get(f"/api/v1/chunks/{doc['id']}")).json()["data"]
        assert "36 months" not in " ".join(c["content"] for c in chunks)
        assert {c["metadata"].get("page") for c in chunks if c["chunk_type"] == "text"} == {1, 3}
