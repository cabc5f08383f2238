"""FAQ entry routes over HTTP."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from knora.adapters.db.repos._mapping import to_row
from knora.adapters.db.tables import KnowledgeBaseRow
from knora.domain.knowledge import KBType, KnowledgeBase
from tests.polling import eventually

pytestmark = pytest.mark.integration


async def faq_kb(c: Any) -> str:
    kb = KnowledgeBase(tenant_id=c.default_tenant_id, name="faq", type=KBType.FAQ)
    async with c.sessions.begin() as s:
        s.add(to_row(KnowledgeBaseRow, kb))
    return kb.id


class TestFaqRoutes:
    async def test_lifecycle(self, sqlite_client: httpx.AsyncClient, sqlite_container: Any) -> None:
        kb = await faq_kb(sqlite_container)
        base = f"/api/v1/knowledge-bases/{kb}/faq"
        r = await sqlite_client.post(f"{base}/entry", json={
            "standard_question": "How long does shipping take?", "similar_questions": ["delivery time"],
            "negative_questions": ["how long does returning take?"], "answers": ["3-5 business days"]})
        assert r.status_code == 200, r.text
        entry = r.json()["data"]
        assert entry["id"] == 1
        assert entry["answers"] == ["3-5 business days"]
        r = await sqlite_client.post(f"{base}/entries", json={"mode": "append", "entries": [
            {"standard_question": "Do you ship abroad?", "answers": ["Yes, to 40 countries"]}]})
        task = r.json()["data"]["task_id"]

        async def finished() -> dict[str, Any] | None:
            p = (await sqlite_client.get(f"/api/v1/faq/import/progress/{task}")).json()["data"]
            return p if p["status"] != "running" else None

        p = await eventually(finished, interval=0.02) or {"status": "still running"}
        assert p["status"] == "completed"
        listing = (await sqlite_client.get(f"{base}/entries", params={"page_size": 10})).json()["data"]
        assert listing["total"] == 2
        assert [e["id"] for e in listing["data"]] == [1, 2]
        r = await sqlite_client.post(f"{base}/search", json={"query_text": "what is the delivery time"})
        assert r.status_code == 200
        assert r.json()["data"][0]["id"] == entry["chunk_id"]
        r = await sqlite_client.put(f"{base}/entries/2", json={"standard_question": "Do you ship to Canada?"})
        assert r.json()["data"]["standard_question"] == "Do you ship to Canada?"
        r = await sqlite_client.request("DELETE", f"{base}/entries", json={"ids": [1]})
        assert r.json()["data"]["deleted"] == 1
        assert (await sqlite_client.get(f"{base}/entries/1")).status_code == 404

    async def test_bad_input(self, sqlite_client: httpx.AsyncClient, sqlite_container: Any) -> None:
        kb = await faq_kb(sqlite_container)
        base = f"/api/v1/knowledge-bases/{kb}/faq"
        assert (await sqlite_client.post(f"{base}/entry", json={"standard_question": " "})).status_code == 400
        assert (await sqlite_client.post(f"{base}/entry", json={"answers": ["x"]})).status_code == 400
        assert (await sqlite_client.post(f"{base}/entries", json={"mode": "merge",
                                                                  "entries": []})).status_code == 400
        missing = "/api/v1/knowledge-bases/00000000-0000-0000-0000-000000000000/faq/entries"
        assert (await sqlite_client.get(missing)).status_code == 404
        assert (await sqlite_client.get("/api/v1/faq/import/progress/nope")).status_code == 404
