"""A PDF through ingestion (worker process, default options: OCR on): every chunk says which page it came
from, so a citation can say "p. 2" — a table's chunk and a scanned page's chunk included."""

from __future__ import annotations

from typing import Any

import pytest
from reportlab.lib import colors
from reportlab.lib.utils import ImageReader
from reportlab.platypus import Table, TableStyle

from knora.domain.document import location_text
from knora.domain.knowledge import ParseStatus
from knora.ports.ocr import OcrUnavailable
from tests.adapters.parsers.test_pdf import HEIGHT, WIDTH, body, make_pdf

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def audit_pdf() -> bytes:
    from knora.adapters.ocr.registry import load_engine

    scans = pytest.importorskip("tests.fakes.scans")
    try:
        load_engine("rapidocr")
        scan = scans.render_scan(["The missing pallets were found in bay 17 of the Turin warehouse."])
    except (scans.FontMissing, OcrUnavailable) as exc:
        pytest.skip(str(exc))

    def draw(c: Any, n: int) -> None:
        if n == 3:
            c.drawImage(ImageReader(scan), 0, 0, WIDTH, HEIGHT)
            return
        body(c, n, [f"Section {n} of the audit report. The auditors read every ledger line."])
        if n == 2:
            table = Table([["Warehouse", "Shortfall"], ["Leeds", "41 pallets"], ["Turin", "7 pallets"]])
            table.setStyle(TableStyle([("GRID", (0, 0), (-1, -1), 0.5, colors.black)]))
            _, h = table.wrapOn(c, WIDTH, HEIGHT)
            table.drawOn(c, 72, HEIGHT - 200 - h)
    return make_pdf(3, draw)


async def test_pdf_chunks_carry_their_page_table_and_scan_included(sqlite_container: Any) -> None:
    c = sqlite_container
    data = audit_pdf()
    kb = await c.kb_service.create(c.default_tenant_id, {"name": "audit",
                                                         "chunking_config": {"chunk_size": 100}})
    k = await c.ingest_service.add_file(c.default_tenant_id, kb.id, "audit.pdf", data)
    await c.jobs.wait_idle(120)
    k = await c.repos.knowledge.get(None, k.id)
    assert k.parse_status == ParseStatus.COMPLETED, k.error_message
    chunks = list((await c.repos.chunks.list(c.default_tenant_id, k.id, page=1, page_size=100)).items)
    where = {location_text(ch.metadata) for ch in chunks if "Leeds" in ch.content}
    assert where == {"p. 2"}
    assert any("| Leeds | 41 pallets |" in ch.content for ch in chunks)
    assert {location_text(ch.metadata) for ch in chunks if "bay 17" in ch.content} == {"p. 3"}
    assert {location_text(ch.metadata) for ch in chunks if "Section 1" in ch.content} == {"p. 1"}
