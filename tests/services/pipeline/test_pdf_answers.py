"""End to end with a PDF: a question whose answer is only in a table of the PDF, and one whose answer is only
in a scanned page (OCR), each answered by the extractive answerer with a citation naming the page."""

from __future__ import annotations

import json
import re
from typing import Any

import httpx
import pytest

from tests.services.ingest.test_ingest_pdf import audit_pdf

pytestmark = [pytest.mark.integration, pytest.mark.slow]


async def ask(http: httpx.AsyncClient, kb: str, question: str) -> str:
    session = (await http.post("/api/v1/sessions", json={"title": "t"})).json()["data"]
    answer = []
    async with http.stream("POST", f"/api/v1/knowledge-chat/{session['id']}",
                           json={"query": question, "knowledge_base_ids": [kb]}) as r:
        async for line in r.aiter_lines():
            if line.startswith("data:"):
                frame = json.loads(line[5:])
                if frame["response_type"] == "answer":
                    answer.append(frame["content"])
    return "".join(answer)


async def test_answers_from_a_pdf_table_and_a_scanned_page_cite_their_pages(plain_container: Any) -> None:
    from knora.api.app import create_app

    c = plain_container
    data = audit_pdf()
    kb = await c.kb_service.create(c.default_tenant_id, {"name": "audit"})
    await c.ingest_service.add_file(c.default_tenant_id, kb.id, "audit.pdf", data)
    await c.jobs.wait_idle(120)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=create_app(services=c)), base_url="http://t",
                                 headers={"X-API-Key": "sk-test-key"}, timeout=120) as http:
        table = await ask(http, str(kb.id), "What was the shortfall at the Leeds warehouse?")
        scan = await ask(http, str(kb.id), "Where were the missing pallets found?")
    assert "Warehouse: Leeds, Shortfall: 41 pallets" in table, table  # the row, read with its header
    assert 2 in cited_pages(table), table
    assert "bay 17" in scan
    assert 3 in cited_pages(scan), scan


def cited_pages(answer: str) -> set[int]:
    """The pages the answer's <kb doc="audit" … page="…"/> tags name ("p. 3", or "pp. 2–3" when the
    pipeline merged neighbouring chunks into one passage)."""
    pages: set[int] = set()
    for where in re.findall(r'<kb doc="audit"[^>]* page="([^"]+)" />', answer):
        numbers = [int(n) for n in re.findall(r"\d+", where)]
        pages.update(range(min(numbers), max(numbers) + 1))
    return pages
