"""Client-compatibility audit, part 3: WeKnora's Go SDK (``client/*.go``) and the documented curl flows (api
§6(a)).

The SDK decodes timestamps into ``time.Time`` (RFC 3339 or the whole response fails), reads ``code`` from a
top-level integer, and parses SSE strictly: ``ContinueStream`` keeps a block only when
``line[6:] == "message"`` and uses the last ``data:`` line of each block.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest

from knora.settings import Settings
from tests.api.test_weknora_compat import assert_int, assert_rfc3339, assert_uuid
from tests.conftest import client_for
from tests.services.streaming.live import frames, live_client
from tests.services.streaming.runners import EXPANDED, ScriptedRunner

pytestmark = pytest.mark.integration

TEA = ("Oolong tea is partially oxidised before it is rolled and dried. Green tea is not oxidised at all, "
       "while black tea is fully oxidised.")


def go_sdk_frames(raw: bytes) -> list[dict[str, Any]]:
    """client/session.go: scan lines; ``event:`` sets the name from ``line[6:]``, ``data:`` keeps
    ``line[5:]``; a blank line ends the block, which is used only if the name is exactly ``message``."""
    out: list[dict[str, Any]] = []
    event, data = "", ""
    for line in raw.decode("utf-8").split("\n"):
        if line.startswith("event:"):
            event = line[6:]
        elif line.startswith("data:"):
            data = line[5:]
        elif line == "":
            if event == "message" and data:
                out.append(json.loads(data))
            elif event or data:
                raise AssertionError(f"block dropped by the Go SDK: event={event!r}")
            event, data = "", ""
    return out


@pytest.fixture
async def sdk(sqlite_container: Any) -> AsyncIterator[tuple[Any, httpx.AsyncClient]]:
    if not sqlite_container.jobs.started:
        await sqlite_container.jobs.start()
    async with client_for(sqlite_container) as http:
        yield sqlite_container, http


async def _kb(c: Any, http: httpx.AsyncClient) -> str:
    r = await http.post("/api/v1/knowledge-bases", json={
        "name": "SDK KB", "description": "", "chunking_config": {"chunk_size": 500, "chunk_overlap": 50,
                                                                  "separators": ["\n\n", "\n", "."]}})
    assert r.status_code == 201, r.text
    kb = r.json()["data"]
    assert_rfc3339(kb["created_at"], nullable=False)
    r = await http.post(f"/api/v1/knowledge-bases/{kb['id']}/knowledge/manual",
                        json={"title": "Tea culture", "content": TEA, "status": "publish"})
    assert r.status_code == 200, r.text
    await c.jobs.wait_idle(60)
    return str(kb["id"])


class TestKnowledgeSearch:
    async def test_by_kb_id_ids_and_knowledge_ids(self, sdk: tuple[Any, httpx.AsyncClient]) -> None:
        c, http = sdk
        kb = await _kb(c, http)
        by_one = await http.post("/api/v1/knowledge-search", json={"query": "oolong tea",
                                                                   "knowledge_base_id": kb})
        assert by_one.status_code == 200, by_one.text
        results = by_one.json()["data"]
        assert results
        assert results[0]["knowledge_title"] == "Tea culture"
        for r in results:
            assert_uuid(r["id"])
            assert_int(r["match_type"])
        by_many = await http.post("/api/v1/knowledge-search", json={"query": "oolong tea",
                                                                    "knowledge_base_ids": [kb]})
        assert [r["id"] for r in by_many.json()["data"]] == [r["id"] for r in results]
        doc = results[0]["knowledge_id"]
        by_doc = await http.post("/api/v1/knowledge-search", json={"query": "oolong tea",
                                                                   "knowledge_ids": [doc]})
        assert by_doc.status_code == 200
        assert {r["knowledge_id"] for r in by_doc.json()["data"]} == {doc}

    async def test_errors_are_400_with_integer_codes(self, sdk: tuple[Any, httpx.AsyncClient]) -> None:
        _c, http = sdk
        for body in ({"query": "no scope"}, {"query": "", "knowledge_base_id": "x"}):
            r = await http.post("/api/v1/knowledge-search", json=body)
            assert r.status_code == 400, r.text
            assert r.json()["success"] is False
            assert_int(r.json()["error"]["code"])


class TestSessions:
    async def test_crud_and_top_level_pagination(self, sdk: tuple[Any, httpx.AsyncClient]) -> None:
        _c, http = sdk
        ids = []
        for i in range(3):
            r = await http.post("/api/v1/sessions", json={"title": f"s{i}", "description": "d"})
            assert r.status_code == 201
            s = r.json()["data"]
            assert_uuid(s["id"])
            assert_int(s["tenant_id"])
            assert s["title"] == f"s{i}"
            assert s["description"] == "d"
            assert_rfc3339(s["created_at"], nullable=False)
            assert_rfc3339(s["updated_at"], nullable=False)
            assert_rfc3339(s["deleted_at"])
            ids.append(s["id"])
        default = (await http.get("/api/v1/sessions")).json()
        assert default["page"] == 1
        assert default["page_size"] == 20
        assert default["total"] == 3
        page2 = (await http.get("/api/v1/sessions", params={"page": 2, "page_size": 2})).json()
        assert set(page2) >= {"success", "data", "total", "page", "page_size"}
        assert page2["total"] == 3
        assert page2["page"] == 2
        assert page2["page_size"] == 2
        assert len(page2["data"]) == 1
        for bad in ({"page_size": 0}, {"page_size": 1001}, {"page": 0}):
            r = await http.get("/api/v1/sessions", params=bad)
            assert r.status_code == 400, bad
            assert_int(r.json()["error"]["code"])
        r = await http.request("DELETE", "/api/v1/sessions/batch", json={"ids": ids[:2]})
        assert r.status_code == 200
        assert r.json()["success"] is True
        assert (await http.get("/api/v1/sessions")).json()["total"] == 1


class TestChatAndResume:
    async def test_go_sdk_parses_knowledge_chat_and_replays_it(self, sdk: tuple[Any,
                                                                                httpx.AsyncClient]) -> None:
        c, http = sdk
        kb = await _kb(c, http)
        sid = (await http.post("/api/v1/sessions", json={"title": "sdk"})).json()["data"]["id"]
        r = await http.post(f"/api/v1/knowledge-chat/{sid}", json={"query": "How is oolong tea processed?",
                                                                    "knowledge_base_ids": [kb],
                                                                   "channel": "api"},
                            headers={"X-Request-ID": "sdk-req-7"})
        assert r.status_code == 200
        live = go_sdk_frames(r.content)
        types = [f["response_type"] for f in live]
        assert types[0] == "agent_query"
        assert types[-1] == "complete"
        assert {f["id"] for f in live} == {"sdk-req-7"}
        refs = [f for f in live if f["response_type"] == "references"]
        assert refs
        assert refs[0]["knowledge_references"] == refs[0]["data"]["references"]
        answer = "".join(f["content"] for f in live if f["response_type"] == "answer")
        assert "partially oxidised" in answer
        # tool_result: the tool's own fields sit flat in ``data`` beside the standard ones (api §2.3).
        search = [f for f in live if f["response_type"] == "tool_result"
                  and f["data"]["tool_name"] == "knowledge_search"]
        assert len(search) == 1
        d = search[0]["data"]
        assert {"tool_name", "success", "error", "duration_ms", "tool_call_id", "output", "count",
                "doc_count",
                "web_count", "search_source", "candidate_count"} <= set(d)
        assert "data" not in d
        assert d["count"] >= 1
        assert d["search_source"] == "knowledge"
        assert_int(d["duration_ms"])
        mid = live[0]["assistant_message_id"]

        msgs = (await http.get(f"/api/v1/messages/{sid}/load", params={"limit": 20})).json()["data"]
        assert [m["role"] for m in msgs] == ["user", "assistant"]
        bot = msgs[1]
        assert bot["id"] == mid
        assert bot["request_id"] == "sdk-req-7"
        assert bot["content"] == answer
        assert bot["knowledge_references"]
        assert bot["is_completed"] is True

        replay = await http.get(f"/api/v1/sessions/continue-stream/{sid}", params={"message_id": mid})
        assert replay.status_code == 200
        assert replay.headers["content-type"].startswith("text/event-stream")
        again = go_sdk_frames(replay.content)
        assert [f["response_type"] for f in again] == types
        assert {f["id"] for f in again} == {"sdk-req-7"}
        assert "".join(f["content"] for f in again if f["response_type"] == "answer") == answer

    async def test_continue_stream_and_stop_errors(self, sdk: tuple[Any, httpx.AsyncClient]) -> None:
        _c, http = sdk
        sid = (await http.post("/api/v1/sessions", json={})).json()["data"]["id"]
        nobody = "00000000-0000-4000-8000-00000000abcd"
        r = await http.get(f"/api/v1/sessions/continue-stream/{nobody}", params={"message_id": nobody})
        assert r.status_code == 404
        assert r.json()["error"]["code"] == 1003
        r = await http.get(f"/api/v1/sessions/continue-stream/{sid}", params={"message_id": nobody})
        assert r.status_code == 404
        assert r.json()["success"] is False
        assert r.json()["error"] == {"code": 1003, "message": "Incomplete message not found"}
        r = await http.post(f"/api/v1/sessions/{sid}/stop", json={})
        assert r.status_code == 400
        assert r.json() == {"success": False, "error": {"code": 1000, "message": "message_id is required"}}
        r = await http.post(f"/api/v1/sessions/{sid}/stop", json={"message_id": nobody})
        assert r.status_code == 404
        assert r.json() == {"success": False, "error": {"code": 1003, "message": "Message not found"}}


@pytest.fixture
async def live(make_settings: Callable[..., Settings]) -> AsyncIterator[tuple[Any, httpx.AsyncClient]]:
    from tests.conftest import started

    async with started(make_settings()) as c:
        c.chat_service.stop_grace_seconds = 0.5
        async with live_client(c) as http:
            yield c, http


async def test_running_turn_history_resume_and_stop(live: tuple[Any, httpx.AsyncClient]) -> None:
    """The SDK/FE resume path: history shows the running row empty and incomplete, continue-stream replays
    from the start with the turn's request id, stop answers WeKnora's body and ends both streams with
    ``stop``."""
    c, http = live
    gate = asyncio.Event()
    c.runners.quick = ScriptedRunner(gate=gate)
    sid = (await http.post("/api/v1/sessions", json={"title": "t"})).json()["data"]["id"]
    async with http.stream("POST", f"/api/v1/knowledge-chat/{sid}", json={"query": "q"},
                           headers={"X-Request-ID": "run-1"}) as r:
        it = frames(r)
        seen: list[dict[str, Any]] = []
        async for f in it:
            if f is not None:
                seen.append(f)
                if f["response_type"] == "answer":
                    break
        mid = seen[0]["assistant_message_id"]
        msgs = (await http.get(f"/api/v1/messages/{sid}/load")).json()["data"]
        assert msgs[-1]["id"] == mid
        assert msgs[-1]["is_completed"] is False
        assert msgs[-1]["content"] == ""
        async with http.stream("GET", f"/api/v1/sessions/continue-stream/{sid}",
                               params={"message_id": mid}) as resumed:
            assert resumed.status_code == 200
            rit = frames(resumed)
            replayed: list[dict[str, Any]] = []
            async for f in rit:
                if f is not None:
                    replayed.append(f)
                    if len(replayed) == len(seen):
                        break
            assert replayed == seen
            assert replayed[0]["response_type"] == "agent_query"
            assert {f["id"] for f in replayed} == {"run-1"}
            stop = await http.post(f"/api/v1/sessions/{sid}/stop", json={"message_id": mid})
            assert stop.status_code == 200
            assert stop.json() == {"success": True, "message": "Generation stopped"}
            tail = [f async for f in rit if f is not None]
        rest = [f async for f in it if f is not None]
    assert rest[-1] == {"id": "run-1", "response_type": "stop", "content": "Generation stopped by user",
                        "done": True}
    assert tail[-1]["response_type"] == "stop"
    assert tail[-1]["done"] is True
    await c.chat_service.wait_idle()
    bot = (await http.get(f"/api/v1/messages/{sid}/load")).json()["data"][-1]
    assert bot["is_completed"] is True
    assert EXPANDED.startswith(bot["content"])
    again = await http.post(f"/api/v1/sessions/{sid}/stop", json={"message_id": mid})
    assert again.json() == {"success": True, "message": "Message already completed"}


async def test_faq_entries_use_the_nested_page_and_integer_seq_ids(sdk: tuple[Any,
                                                                              httpx.AsyncClient]) -> None:
    _c, http = sdk
    kb = (await http.post("/api/v1/knowledge-bases", json={"name": "FAQ",
                                                           "type": "faq"})).json()["data"]["id"]
    empty = (await http.get(f"/api/v1/knowledge-bases/{kb}/faq/entries")).json()
    assert empty == {"success": True, "data": {"data": [], "total": 0, "page": 1, "page_size": 20}}
    r = await http.post(f"/api/v1/knowledge-bases/{kb}/faq/entry",
                        json={"standard_question": "How long is the warranty?", "answers": ["Two years."]})
    assert r.status_code in (200, 201), r.text
    entry = r.json()["data"]
    assert_int(entry["id"])
    assert_int(entry["tag_id"])
    assert isinstance(entry["similar_questions"], list)
    assert isinstance(entry["negative_questions"], list)
    paged = (await http.get(f"/api/v1/knowledge-bases/{kb}/faq/entries", params={"page": 1,
                                                                                 "page_size": 5})).json()
    assert set(paged) == {"success", "data"}
    assert paged["data"]["total"] == 1
    assert paged["data"]["page_size"] == 5
    assert [e["id"] for e in paged["data"]["data"]] == [entry["id"]]


class TestGoSdkDecoding:
    """Issue 13 items 3–5: what the Go SDK sends (``null`` for an unset slice, map or struct pointer) is
    accepted, and what it decodes (``AgentStep.Timestamp`` a ``time.Time``, ``Chunk.ImageInfo`` a string)
    has its Go type."""

    async def test_knowledge_qa_stream_with_null_slices_and_its_history(
            self, sdk: tuple[Any, httpx.AsyncClient]) -> None:
        c, http = sdk
        kb = await _kb(c, http)
        sid = (await http.post("/api/v1/sessions", json={"title": "sdk"})).json()["data"]["id"]
        # client/session.go KnowledgeQARequest as encoding/json writes it with KnowledgeIDs unset.
        r = await http.post(f"/api/v1/knowledge-chat/{sid}", json={
            "query": "How is oolong tea processed?", "knowledge_base_ids": [kb], "knowledge_ids": None,
            "agent_enabled": False, "agent_id": "", "web_search_enabled": False, "summary_model_id": "",
            "disable_title": False, "channel": "api", "tag_ids": None, "mentioned_items": None})
        assert r.status_code == 200, r.text
        assert go_sdk_frames(r.content)[-1]["response_type"] == "complete"
        msgs = (await http.get(f"/api/v1/messages/{sid}/load", params={"limit": 20})).json()["data"]
        steps = msgs[-1]["agent_steps"]
        assert steps  # the quick-answer timeline: its knowledge_search call
        for step in steps:
            assert_rfc3339(step["timestamp"], nullable=False)
            assert_int(step["iteration"])
            assert isinstance(step["tool_calls"], list)

    async def test_a_step_saved_with_a_unix_timestamp_reads_as_rfc3339(
            self, sdk: tuple[Any, httpx.AsyncClient]) -> None:
        from sqlalchemy import update

        from knora.adapters.db.tables import MessageRow

        c, http = sdk
        kb = await _kb(c, http)
        sid = (await http.post("/api/v1/sessions", json={})).json()["data"]["id"]
        r = await http.post(f"/api/v1/knowledge-chat/{sid}", json={"query": "oolong tea",
                                                                    "knowledge_base_ids": [kb]})
        mid = go_sdk_frames(r.content)[0]["assistant_message_id"]
        old = [{"iteration": 0, "thought": "", "reasoning_content": "", "tool_calls": [],
                "timestamp": 1765000000},
               {"iteration": 1, "thought": "", "tool_calls": [], "timestamp": 10 ** 30}]
        async with c.db.begin() as conn:
            await conn.execute(update(MessageRow).where(MessageRow.id == mid).values(agent_steps=old))
        bot = (await http.get(f"/api/v1/messages/{sid}/load")).json()["data"][-1]
        assert bot["id"] == mid
        assert [s["timestamp"] for s in bot["agent_steps"]] == ["2025-12-06T05:46:40Z", None]

    async def test_other_bodies_take_null_as_absent(self, sdk: tuple[Any, httpx.AsyncClient]) -> None:
        c, http = sdk
        r = await http.post("/api/v1/knowledge-bases", json={"name": "nulls", "chunking_config": None,
                                                             "faq_config": None, "retrieval_config": None})
        assert r.status_code == 201, r.text
        kb = r.json()["data"]
        assert isinstance(kb["chunking_config"], dict)
        r = await http.put(f"/api/v1/knowledge-bases/{kb['id']}", json={"name": "renamed", "config": None,
                                                                        "chunking_config": None})
        assert r.status_code == 200, r.text
        assert r.json()["data"]["name"] == "renamed"
        r = await http.post("/api/v1/sessions", json={"title": "t", "agent_config": None})
        assert r.status_code == 201, r.text
        r = await http.post("/api/v1/agents", json={"name": "a", "config": None})
        assert r.status_code == 201, r.text
        kb_id = await _kb(c, http)
        r = await http.post("/api/v1/knowledge-search", json={
            "query": "oolong tea", "knowledge_base_id": kb_id, "knowledge_base_ids": None,
            "knowledge_ids": None, "tag_ids": None})
        assert r.status_code == 200, r.text
        assert r.json()["data"]

    async def test_chunks_carry_image_info_as_json_text(self, sdk: tuple[Any, httpx.AsyncClient]) -> None:
        c, http = sdk
        kb = await _kb(c, http)
        doc = (await http.get(f"/api/v1/knowledge-bases/{kb}/knowledge")).json()["data"][0]["id"]
        listed = (await http.get(f"/api/v1/chunks/{doc}")).json()["data"]
        assert listed
        assert [ch["image_info"] for ch in listed] == [""] * len(listed)
        cid = listed[0]["id"]
        one = (await http.get(f"/api/v1/chunks/{doc}/{cid}")).json()["data"]
        assert one["image_info"] == ""
        assert (await http.get(f"/api/v1/chunks/by-id/{cid}")).json()["data"]["image_info"] == ""

        images = [{"url": "https://example.com/leaf.png", "caption": "a tea leaf", "ocr_text": ""}]
        as_text = await http.put(f"/api/v1/chunks/{doc}/{cid}", json={"image_info": json.dumps(images)})
        assert as_text.status_code == 200, as_text.text
        assert json.loads(as_text.json()["data"]["image_info"]) == images
        as_list = await http.put(f"/api/v1/chunks/{doc}/{cid}", json={"image_info": images[:1] * 2})
        assert json.loads(as_list.json()["data"]["image_info"]) == images * 2
        got = (await http.get(f"/api/v1/chunks/{doc}")).json()["data"]
        assert json.loads(next(ch for ch in got if ch["id"] == cid)["image_info"]) == images * 2
        found = (await http.post("/api/v1/knowledge-search", json={"query": "oolong tea",
                                                                   "knowledge_base_id": kb})).json()["data"]
        assert all(isinstance(r["image_info"], str) for r in found)
        assert json.loads(next(r for r in found if r["id"] == cid)["image_info"]) == images * 2
        for bad in ("not json", '{"url": "x"}', "[1]"):
            r = await http.put(f"/api/v1/chunks/{doc}/{cid}", json={"image_info": bad})
            assert r.status_code == 400, bad
            assert_int(r.json()["error"]["code"])
        cleared = await http.put(f"/api/v1/chunks/{doc}/{cid}", json={"image_info": ""})
        assert cleared.json()["data"]["image_info"] == ""
