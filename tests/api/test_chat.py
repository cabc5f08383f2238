"""POST /knowledge-chat and /agent-chat: the SSE wire, the saved messages, history, titles, bad input."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.services.streaming.runners import EXPANDED, RESULTS, ScriptedRunner
from tests.services.streaming.sse import parse_sse

pytestmark = pytest.mark.integration


async def new_session(client: httpx.AsyncClient, **body: Any) -> str:
    r = await client.post("/api/v1/sessions", json=body)
    assert r.status_code == 201, r.text
    return str(r.json()["data"]["id"])


async def chat(client: httpx.AsyncClient, sid: str, body: dict[str, Any], *, path: str = "knowledge-chat",
               headers: dict[str, str] | None = None) -> httpx.Response:
    return await client.post(f"/api/v1/{path}/{sid}", json=body, headers=headers or {})


@pytest.fixture
def runner(sqlite_container: Any) -> ScriptedRunner:
    r = ScriptedRunner()
    sqlite_container.runners.quick = r
    return r


class TestChatStream:
    async def test_frames_order_and_shape(self, sqlite_client: httpx.AsyncClient,
                                          runner: ScriptedRunner) -> None:
        sid = await new_session(sqlite_client)
        r = await chat(sqlite_client, sid, {"query": "How does Knora stream?"},
                       headers={"X-Request-ID": "req-1"})
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        assert r.headers["cache-control"] == "no-cache"
        assert r.headers["x-accel-buffering"] == "no"
        s = parse_sse(r.content)
        assert all(f["id"] == "req-1" for f in s.frames)
        assert s.types[0] == "agent_query"
        assert s.frames[0]["done"] is True
        mid = s.frames[0]["assistant_message_id"]
        assert s.frames[0]["session_id"] == sid
        assert s.frames[0]["data"] == {"session_id": sid,
                                                                           "assistant_message_id": mid}
        assert s.types.index("tool_call") < s.types.index("tool_result") < s.types.index("references")
        assert s.types.index("references") < s.types.index("answer")
        complete = s.types.index("complete")
        assert s.types[complete + 1:] == ["session_title"]
        assert max(i for i, t in enumerate(s.types) if t == "answer") < complete
        refs = s.of("references")[0]
        assert [k["id"] for k in refs["knowledge_references"]] == [r.id for r in RESULTS]
        assert refs["data"]["references"] == refs["knowledge_references"]
        assert s.answer() == EXPANDED
        answers = s.of("answer")
        assert answers[-1]["done"] is True
        assert all(not a["done"] for a in answers[:-1])
        assert len({a["data"]["event_id"] for a in answers}) == 1
        assert s.of("tool_call")[0]["content"] == "Calling tool: knowledge_search"
        title = s.of("session_title")[0]
        assert title["content"] == "How does Knora stream?"
        assert title["data"]["session_id"] == sid

    async def test_message_pair_is_saved(self, sqlite_client: httpx.AsyncClient, runner: ScriptedRunner,
                                         sqlite_container: Any) -> None:
        sid = await new_session(sqlite_client)
        s = parse_sse((await chat(sqlite_client, sid, {"query": "Q1"},
                                  headers={"X-Request-ID": "r-a"})).content)
        await sqlite_container.chat_service.wait_idle()
        msgs = (await sqlite_client.get(f"/api/v1/messages/{sid}/load")).json()["data"]
        assert [m["role"] for m in msgs] == ["user", "assistant"]
        user, bot = msgs
        assert user["request_id"] == bot["request_id"] == "r-a"
        assert bot["id"] == s.frames[0]["assistant_message_id"]
        assert bot["is_completed"]
        assert not bot["is_fallback"]
        assert bot["content"] == EXPANDED
        assert [k["id"] for k in bot["knowledge_references"]] == [r.id for r in RESULTS]
        assert bot["model_id"] == "scripted:test"
        assert bot["agent_steps"][0]["tool_calls"][0]["name"] == "knowledge_search"
        assert bot["debug"]["timings"] == {"chunk_search": 1.5}
        assert bot["debug"]["stages"][0]["kept"] == 2
        assert "rendered_content" not in bot
        session = (await sqlite_client.get(f"/api/v1/sessions/{sid}")).json()["data"]
        assert session["title"] == "Q1"
        assert session["last_request_state"]["agent_enabled"] is False

    async def test_history_reaches_the_next_turn(self, sqlite_client: httpx.AsyncClient,
                                                 runner: ScriptedRunner, sqlite_container: Any) -> None:
        sid = await new_session(sqlite_client, title="Fixed")
        first = parse_sse((await chat(sqlite_client, sid, {"query": "first"})).content)
        assert "session_title" not in first.types  # the session already had a title
        await sqlite_container.chat_service.wait_idle()
        await chat(sqlite_client, sid, {"query": "second", "knowledge_base_ids": ["k1"],
                                        "mentioned_items": [{"type": "kb", "id": "k2"}, {"type": "file",
                                                                                         "id": "f"}]})
        req = runner.requests[-1]
        assert [(h.query, h.answer) for h in req.history] == [("first", EXPANDED)]
        assert req.knowledge_base_ids == ["k1", "k2"]
        assert req.knowledge_ids == ["f"]

    async def test_unstreamed_answer_is_sent_as_fallback_pair(self, sqlite_client: httpx.AsyncClient,
                                                              sqlite_container: Any) -> None:
        sqlite_container.runners.quick = ScriptedRunner(stream=False)
        sid = await new_session(sqlite_client)
        s = parse_sse((await chat(sqlite_client, sid, {"query": "q", "disable_title": True})).content)
        answers = s.of("answer")
        assert [a["content"] for a in answers] == [EXPANDED, ""]
        assert all(a["data"]["event_id"].startswith("answer-fallback-") and a["data"]["is_fallback"]
                   for a in answers)
        assert s.types[-1] == "complete"

    async def test_runner_failure_sends_error_then_complete(self, sqlite_client: httpx.AsyncClient,
                                                            sqlite_container: Any) -> None:
        sqlite_container.runners.quick = ScriptedRunner(fail="model exploded")
        sid = await new_session(sqlite_client)
        s = parse_sse((await chat(sqlite_client, sid, {"query": "q", "disable_title": True})).content)
        err = s.of("error")[0]
        assert err["done"] is True
        assert err["content"] == "model exploded"
        assert err["data"]["stage"] == "knowledge_qa_execution"
        assert s.types[-1] == "complete"
        await sqlite_container.chat_service.wait_idle()
        bot = (await sqlite_client.get(f"/api/v1/messages/{sid}/load")).json()["data"][-1]
        assert bot["is_completed"] is True

    async def test_thinking_is_streamed_and_kept(self, sqlite_client: httpx.AsyncClient,
                                                 sqlite_container: Any) -> None:
        sqlite_container.runners.quick = ScriptedRunner(thinking='reason about <ref id="c1"/>')
        sid = await new_session(sqlite_client)
        s = parse_sse((await chat(sqlite_client, sid, {"query": "q"})).content)
        thinking = s.of("thinking")
        assert thinking[-1]["done"]
        assert "duration_ms" in thinking[-1]["data"]
        assert "chunk_id=" in "".join(t["content"] for t in thinking)
        await sqlite_container.chat_service.wait_idle()
        bot = (await sqlite_client.get(f"/api/v1/messages/{sid}/load")).json()["data"][-1]
        assert "reason about" in bot["agent_steps"][0]["reasoning_content"]


class TestAgentChat:
    async def test_agent_chat_without_agent_runs_quick_answer(self, sqlite_client: httpx.AsyncClient,
                                                              runner: ScriptedRunner) -> None:
        sid = await new_session(sqlite_client)
        s = parse_sse((await chat(sqlite_client, sid, {"query": "q"}, path="agent-chat")).content)
        assert s.types[0] == "agent_query"
        assert s.answer() == EXPANDED
        assert len(runner.requests) == 1

    async def test_agent_enabled_without_agent_is_400(self, sqlite_client: httpx.AsyncClient,
                                                      runner: ScriptedRunner) -> None:
        sid = await new_session(sqlite_client)
        r = await chat(sqlite_client, sid, {"query": "q", "agent_enabled": True}, path="agent-chat")
        assert r.status_code == 400
        assert r.json()["error"]["message"] == "agent_id is required when agent mode is enabled"

    async def test_smart_reasoning_agent_uses_that_runner(self, sqlite_client: httpx.AsyncClient,
                                                          sqlite_container: Any,
                                                          runner: ScriptedRunner) -> None:
        smart = ScriptedRunner(answer="smart answer")
        sqlite_container.runners.smart = smart  # the built-in smart-reasoning agent runs on this runner
        sid = await new_session(sqlite_client)
        s = parse_sse((await chat(sqlite_client, sid, {"query": "q", "agent_id": "builtin-smart-reasoning",
                                                       "disable_title": True}, path="agent-chat")).content)
        assert s.answer() == "smart answer"
        assert smart.requests
        assert not runner.requests
        assert "session_title" in s.types  # the ReAct path always titles
        # knowledge-chat always runs the quick-answer pipeline, whatever the agent
        await chat(sqlite_client, await new_session(sqlite_client),
                   {"query": "q", "agent_id": "builtin-smart-reasoning"}, path="knowledge-chat")
        assert len(runner.requests) == 1
        assert len(smart.requests) == 1


class TestBadInput:
    async def test_unknown_and_foreign_sessions_are_404(self, sqlite_client: httpx.AsyncClient,
                                                        sqlite_container: Any,
                                                        runner: ScriptedRunner) -> None:
        r = await chat(sqlite_client, "00000000-0000-0000-0000-000000000000", {"query": "q"})
        assert r.status_code == 404
        assert r.json()["error"] == {"code": 1003, "message": "Session not found"}
        assert (await chat(sqlite_client, "not-a-uuid", {"query": "q"})).status_code == 404
        foreign = await sqlite_container.session_service.create(await other_tenant(sqlite_container))
        r = await chat(sqlite_client, foreign.id, {"query": "q"})
        assert r.status_code == 404

    @pytest.mark.parametrize(("body", "status"), [
        (b"{not json", 400), (b"[1,2]", 400), (b"", 400), (b'{"query": ""}', 400), (b'{"query": "   "}', 400),
        (b'{"foo": 1}', 400), (b'{"query": 5}', 400), (b'{"query": "q", "knowledge_base_ids": "x"}', 400),
        (b'{"query": "q", "images": [{"data": "data:image/png;base64,AA=="}]}', 400),
    ])
    async def test_malformed_bodies(self, sqlite_client: httpx.AsyncClient, runner: ScriptedRunner,
                                    body: bytes, status: int) -> None:
        sid = await new_session(sqlite_client)
        r = await sqlite_client.post(f"/api/v1/knowledge-chat/{sid}", content=body,
                                     headers={"Content-Type": "application/json"})
        assert r.status_code == status, r.text
        assert r.json()["success"] is False
        assert r.json()["error"]["code"] in (1000, 1010)
        assert runner.requests == []
        msgs = (await sqlite_client.get(f"/api/v1/messages/{sid}/load")).json()["data"]
        assert msgs == []  # nothing half-created

    async def test_megabyte_query_is_413(self, sqlite_client: httpx.AsyncClient,
                                         runner: ScriptedRunner) -> None:
        sid = await new_session(sqlite_client)
        r = await chat(sqlite_client, sid, {"query": "x" * (1024 * 1024)})
        assert r.status_code == 413
        assert r.json()["success"] is False
        assert runner.requests == []

    async def test_bad_resource_urls_mode(self, sqlite_client: httpx.AsyncClient,
                                          runner: ScriptedRunner) -> None:
        sid = await new_session(sqlite_client)
        r = await sqlite_client.post(f"/api/v1/knowledge-chat/{sid}?resource_urls=bogus", json={"query": "q"})
        assert r.status_code == 400

    async def test_unauthenticated_is_401(self, sqlite_client: httpx.AsyncClient,
                                          runner: ScriptedRunner) -> None:
        sid = await new_session(sqlite_client)
        r = await sqlite_client.post(f"/api/v1/knowledge-chat/{sid}", json={"query": "q"},
                                     headers={"X-API-Key": "wrong"})
        assert r.status_code == 401


async def other_tenant(c: Any) -> int:
    from knora.adapters.db.tables import TenantRow

    async with c.sessions.begin() as s:
        row = TenantRow(name="other")
        s.add(row)
        await s.flush()
        return int(row.id)
