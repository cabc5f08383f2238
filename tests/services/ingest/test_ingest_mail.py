"""An e-mail ingested end to end (through the parser pool): a chunk cut from an attachment says which one in
its metadata, so a citation can name "attachment budget.csv"."""

from __future__ import annotations

from typing import Any

import pytest

from knora.domain.document import location_text
from tests.adapters.parsers.test_eml import message
from tests.adapters.parsers.test_parsers import make_pdf

pytestmark = pytest.mark.integration


async def test_chunks_from_attachments_name_them(sqlite_container: Any) -> None:
    c = sqlite_container
    m = message(body="Hello team, the numbers are attached. " * 8)
    plan = "\n".join(["The launch is planned for the second week of March."]
                     + [f"Step {i}: prepare the venue, the speakers and the press kit." for i in range(6)])
    m.add_attachment(make_pdf([plan]), maintype="application", subtype="pdf", filename="plan.pdf")
    m.add_attachment(b"item,cost\n" + b"".join(b"servers %d,4000\n" % i for i in range(30)),
                     maintype="text", subtype="csv", filename="budget.csv")
    kb = await c.kb_service.create(c.default_tenant_id, {"name": "mail",
                                                         "chunking_config": {"chunk_size": 200}})
    k = await c.ingest_service.add_file(c.default_tenant_id, kb.id, "numbers.eml", m.as_bytes())
    await c.jobs.wait_idle(60)
    k = await c.repos.knowledge.get(None, k.id)
    assert str(k.parse_status) == "completed", k.error_message
    assert k.title == "Budget 2026"
    chunks = (await c.repos.chunks.list(c.default_tenant_id, k.id, page=1, page_size=100)).items
    where = {location_text(ch.metadata) for ch in chunks}
    # the PDF's own pages are kept inside the attachment
    assert {"attachment budget.csv", "attachment plan.pdf, p. 1"} <= where
    assert any(ch.metadata.get("page_label") == "plan.pdf, p. 1" and "press kit" in ch.content
               for ch in chunks)
    body = next(ch for ch in chunks if "Hello team" in ch.content)
    assert location_text(body.metadata) == ""
