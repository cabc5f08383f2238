"""Issue 15's e-book, RTF, legacy Excel/Word and code formats through ingestion end to end: the upload is
accepted by its type, chunks carry the section or sheet they come from, and a legacy Word binary ends
``failed`` with the format to convert to."""

from __future__ import annotations

from typing import Any

import pytest

from knora.domain.knowledge import ParseStatus
from tests.adapters.parsers.test_epub import make_epub
from tests.adapters.parsers.test_xls import make_xls

pytestmark = pytest.mark.integration


async def _ingest(c: Any, name: str, data: bytes) -> tuple[Any, list[Any]]:
    kb = await c.kb_service.create(c.default_tenant_id, {"name": "docs"})
    k = await c.ingest_service.add_file(c.default_tenant_id, kb.id, name, data)
    await c.jobs.wait_idle(60)
    k = await c.repos.knowledge.get(None, k.id)
    page = await c.repos.chunks.list(c.default_tenant_id, k.id, page=1, page_size=1000)
    return k, list(page.items)


async def test_an_epub_chunk_names_its_chapter(sqlite_container: Any) -> None:
    k, chunks = await _ingest(sqlite_container, "guide.epub", make_epub())
    assert k.parse_status == ParseStatus.COMPLETED, k.error_message
    assert k.title == "The Field Guide"
    hit = next(ch for ch in chunks if "五百一十二" in ch.content)
    assert (hit.metadata["page"], hit.metadata["page_kind"], hit.metadata["page_label"]) == (
        3, "section", "第二章 配置")
    assert {ch.metadata.get("page_label") for ch in chunks} == {"Getting Started", "Appendix", "第二章 配置"}


async def test_an_xls_chunk_names_its_sheet(sqlite_container: Any) -> None:
    k, chunks = await _ingest(sqlite_container, "sales.xls", make_xls())
    assert k.parse_status == ParseStatus.COMPLETED, k.error_message
    hit = next(ch for ch in chunks if "李雷" in ch.content)
    # the sheet 员工 is the workbook's third (the second, Empty, has no span)
    assert (hit.metadata["page"], hit.metadata["page_kind"], hit.metadata["page_label"]) == (
        3, "sheet", "员工")
    assert chunks[0].metadata["page_label"] == "Sales"


async def test_a_dockerfile_is_accepted_by_its_name(sqlite_container: Any) -> None:
    dockerfile = b"FROM python:3.11-slim\nRUN pip install knora\n"
    k, chunks = await _ingest(sqlite_container, "Dockerfile", dockerfile)
    assert k.parse_status == ParseStatus.COMPLETED, k.error_message
    assert "RUN pip install knora" in chunks[0].content


async def test_a_word_binary_fails_with_what_to_do(sqlite_container: Any) -> None:
    ole = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 600  # an OLE compound file's signature
    k, chunks = await _ingest(sqlite_container, "letter.doc", ole)
    assert k.parse_status == ParseStatus.FAILED
    assert "save it as .docx (or PDF)" in (k.error_message or "")
    assert chunks == []
