"""The sample knowledge base: created once, in the background, with every bundled document ingested."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from knora.domain.knowledge import ParseStatus
from knora.services.ingest.sample import SAMPLE_DIR
from knora.settings import Settings
from tests.conftest import started

pytestmark = pytest.mark.integration


async def _sample(c: Any) -> Any:
    for _ in range(500):
        kb = await c.repos.kbs.get_by_name(c.default_tenant_id, "Sample")
        if kb is not None:
            return kb
        await asyncio.sleep(0.02)
    raise AssertionError("sample KB was not created")


async def test_sample_kb_is_ingested_once(make_settings: Callable[..., Settings]) -> None:
    settings = make_settings(sample_kb=True)
    async with started(settings) as c:
        kb = await _sample(c)
        expected = len([p for p in SAMPLE_DIR.iterdir() if p.is_file()])
        for _ in range(1000):  # documents are queued one by one in the background
            docs = (await c.repos.knowledge.list(c.default_tenant_id, kb.id, page=1, page_size=50)).items
            if len(docs) == expected:
                break
            await asyncio.sleep(0.02)
        await c.jobs.wait_idle(60)
        docs = (await c.repos.knowledge.list(c.default_tenant_id, kb.id, page=1, page_size=50)).items
        assert len(docs) == len([p for p in SAMPLE_DIR.iterdir() if p.is_file()]) >= 3
        assert all(d.parse_status == ParseStatus.COMPLETED for d in docs), [d.error_message for d in docs]
        assert any("常见问题" in d.title for d in docs)
        await c.kb_service.delete(c.default_tenant_id, kb.id)
    async with started(settings) as again:
        await asyncio.sleep(0.2)
        assert await again.repos.kbs.get_by_name(again.default_tenant_id, "Sample") is None
