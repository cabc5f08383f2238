"""The FAQ page's batch edits and export through the real app on SQLite:
``PUT …/faq/entries/fields``, ``PUT …/faq/entries/tags``, ``GET …/faq/entries/export`` (which
``…/faq/entries/{entry_id}`` used to catch)."""

from __future__ import annotations

import csv
import io
from typing import Any

import httpx
import pytest

from knora.root import Services
from tests.api.test_faq_api import faq_kb
from tests.conftest import client_for

pytestmark = pytest.mark.integration


async def _setup(http: httpx.AsyncClient, c: Services) -> tuple[str, str, str]:
    """An FAQ KB with three entries (ids 1-3) and two tags: (kb id, tag a, tag b)."""
    kb = await faq_kb(c)
    tags = []
    for name in ("billing", "shipping"):
        r = await http.post(f"/api/v1/knowledge-bases/{kb}/tags", json={"name": name})
        assert r.status_code == 200, r.text
        tags.append(r.json()["data"]["id"])
    for q, a in (("How do I pay?", "By card, or \"cash\""), ("Refunds?", "Within 14 days"),
                 ("Shipping time?", "3-5 days")):
        r = await http.post(f"/api/v1/knowledge-bases/{kb}/faq/entry",
                            json={"standard_question": q, "answers": [a],
                                  "similar_questions": [f"{q} again"]})
        assert r.status_code == 200, r.text
    return kb, tags[0], tags[1]


async def _entries(http: httpx.AsyncClient, kb: str) -> dict[int, dict[str, Any]]:
    r = await http.get(f"/api/v1/knowledge-bases/{kb}/faq/entries", params={"page_size": 50})
    return {e["id"]: e for e in r.json()["data"]["data"]}


async def test_tags_then_fields_by_id_and_by_tag(sqlite_client: httpx.AsyncClient,
                                                 sqlite_container: Services) -> None:
    kb, billing, shipping = await _setup(sqlite_client, sqlite_container)
    base = f"/api/v1/knowledge-bases/{kb}/faq/entries"
    r = await sqlite_client.put(f"{base}/tags", json={"updates": {"1": billing, "2": billing, "3": shipping}})
    assert r.status_code == 200, r.text
    assert r.json() == {"success": True}
    got = await _entries(sqlite_client, kb)
    assert [got[i]["tag_id"] for i in (1, 2, 3)] == [billing, billing, shipping]

    # every billing entry but 2 off; entry 3 not recommended; entry 2 loses its tag
    r = await sqlite_client.put(f"{base}/fields", json={
        "by_tag": {billing: {"is_enabled": False}}, "exclude_ids": [2],
        "by_id": {"3": {"is_recommended": False}, "2": {"tag_id": 0}}})
    assert r.status_code == 200, r.text
    got = await _entries(sqlite_client, kb)
    assert [got[i]["is_enabled"] for i in (1, 2, 3)] == [False, True, True]
    assert [got[i]["is_recommended"] for i in (1, 2, 3)] == [True, True, False]
    assert [got[i]["tag_id"] for i in (1, 2, 3)] == [billing, 0, shipping]

    # the index follows: a disabled entry is not found by FAQ search any more
    r = await sqlite_client.post(f"/api/v1/knowledge-bases/{kb}/faq/search",
                                 json={"query_text": "How do I pay?"})
    assert got[1]["chunk_id"] not in [hit["id"] for hit in r.json()["data"]]
    r = await sqlite_client.put(f"{base}/tags", json={"updates": {"3": None}})
    assert (await _entries(sqlite_client, kb))[3]["tag_id"] == 0


async def test_export_csv_and_json(sqlite_client: httpx.AsyncClient, sqlite_container: Services) -> None:
    kb, billing, _ = await _setup(sqlite_client, sqlite_container)
    base = f"/api/v1/knowledge-bases/{kb}/faq/entries"
    await sqlite_client.put(f"{base}/tags", json={"updates": {"1": billing}})
    await sqlite_client.put(f"{base}/fields", json={"by_id": {"2": {"is_enabled": False}}})
    r = await sqlite_client.get(f"{base}/export")
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/csv")
    assert "faq_export.csv" in r.headers["content-disposition"]
    assert r.content.startswith(b"\xef\xbb\xbf")
    rows = list(csv.reader(io.StringIO(r.content[3:].decode("utf-8"))))
    assert rows[0][0] == "分类(必填)"
    assert len(rows[0]) == 8
    assert rows[1] == ["billing", "How do I pay?", "How do I pay? again", "", 'By card, or "cash"', "TRUE",
                       "FALSE", "FALSE"]
    assert rows[2][6] == "TRUE"  # entry 2 is disabled
    assert len(rows) == 4
    j = await sqlite_client.get(f"{base}/export", params={"format": "json"})
    assert j.headers["content-type"].startswith("application/json")
    assert [(e["id"], e["tag_name"], e["is_enabled"]) for e in j.json()] == [
        (1, "billing", True), (2, "", False), (3, "", True)]


async def test_bad_input_and_other_tenants(sqlite_client: httpx.AsyncClient,
                                           sqlite_container: Services) -> None:
    kb, billing, _ = await _setup(sqlite_client, sqlite_container)
    base = f"/api/v1/knowledge-bases/{kb}/faq/entries"
    bad = [("fields", {}), ("fields", {"by_id": {"x": {"is_enabled": False}}}),
           ("fields", {"by_id": {"1": {"is_enabled": "maybe"}}}), ("fields", []), ("tags", {"updates": {}}),
           ("tags", {"updates": "1"}), ("tags", {})]
    for path, body in bad:
        r = await sqlite_client.put(f"{base}/{path}", json=body)
        assert r.status_code == 400, (path, body, r.text)
        assert r.json()["success"] is False
    nowhere = "00000000-0000-4000-8000-000000000000"
    for path, body in [("fields", {"by_id": {"99": {"is_enabled": False}}}),
                       ("tags", {"updates": {"99": None}}), ("tags", {"updates": {"1": nowhere}}),
                       ("fields", {"by_tag": {nowhere: {"is_enabled": False}}})]:
        r = await sqlite_client.put(f"{base}/{path}", json=body)
        assert r.status_code == 404, (path, body, r.text)
    assert (await sqlite_client.get(f"{base}/export", params={"format": "xml"})).status_code == 400
    before = await _entries(sqlite_client, kb)
    assert all(e["is_enabled"] for e in before.values())  # nothing changed by the refused edits

    # another tenant: its own tag cannot be put on this KB's entries; this KB is not found for it
    _, key = await sqlite_container.tenants.create("other")
    async with client_for(sqlite_container, **{"X-API-Key": key}) as other:
        assert (await other.put(f"{base}/tags", json={"updates": {"1": billing}})).status_code == 404
        off = {"by_id": {"1": {"is_enabled": False}}}
        assert (await other.put(f"{base}/fields", json=off)).status_code == 404
        assert (await other.get(f"{base}/export")).status_code == 404
    assert (await _entries(sqlite_client, kb))[1]["is_enabled"] is True
