"""Live streaming over a real socket: resume from 0 and from a cursor, stop mid-stream, disconnects,
keep-alive."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator, Callable
from datetime import timedelta
from typing import Any

import httpx
import pytest

from knora.domain.common import utcnow
from knora.domain.conversation import Message
from knora.domain.stream import StreamEvent
from knora.settings import Settings
from tests.fakes.stream_log import ManualHeartbeatLog
from tests.services.streaming.live import frames, live_client
from tests.services.streaming.runners import EXPANDED, ScriptedRunner
from tests.services.streaming.sse import parse_sse

pytestmark = pytest.mark.integration


@pytest.fixture
async def app_container(make_settings: Callable[..., Settings]) -> AsyncIterator[Any]:
    from tests.conftest import started

    async with started(make_settings(sse_keepalive_seconds=0.05)) as c:
        c.chat_service.stop_grace_seconds = 0.5
        yield c


@pytest.fixture
async def http(app_container: Any) -> AsyncIterator[httpx.AsyncClient]:
    async with live_client(app_container) as client:
        yield client


async def session(http: httpx.AsyncClient) -> str:
    return str((await http.post("/api/v1/sessions", json={"title": "t"})).json()["data"]["id"])


async def first_answer(it: AsyncIterator[dict[str, Any] | None]) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []
    async for f in it:
        if f is None:
            continue
        seen.append(f)
        if f["response_type"] == "answer":
            return seen
    raise AssertionError("stream ended before an answer")


class TestResume:
    async def test_replay_from_zero_and_cursor_match_the_live_stream(self, http: httpx.AsyncClient,
                                                                    app_container: Any) -> None:
        gate = asyncio.Event()
        app_container.runners.quick = ScriptedRunner(gate=gate)
        sid = await session(http)
        async with http.stream("POST", f"/api/v1/knowledge-chat/{sid}", json={"query": "q"},
                               headers={"X-Request-ID": "live-1"}) as r:
            it = frames(r)
            live = await first_answer(it)
            mid = live[0]["assistant_message_id"]
            url = f"/api/v1/sessions/continue-stream/{sid}?message_id={mid}"
            replay0 = asyncio.create_task(http.get(url))
            replay_cursor = asyncio.create_task(http.get(url, headers={"Last-Event-ID": "2"}))
            replay_offset = asyncio.create_task(http.get(url + "&offset=4"))
            await asyncio.sleep(0)
            gate.set()
            live += [f async for f in it if f is not None]
        full = parse_sse((await replay0).content).frames
        assert [f["response_type"] for f in full] == [f["response_type"] for f in live]
        assert full == live  # same frames, same order, same request id: nothing lost or duplicated
        assert "".join(f["content"] for f in full if f["response_type"] == "answer") == EXPANDED
        assert parse_sse((await replay_cursor).content).frames == full[3:]
        assert parse_sse((await replay_offset).content).frames == full[4:]
        assert all(f["id"] == "live-1" for f in full)

    async def test_resume_errors(self, http: httpx.AsyncClient, app_container: Any) -> None:
        sid = await session(http)
        base = f"/api/v1/sessions/continue-stream/{sid}"
        r = await http.get(base)
        assert r.status_code == 400
        r = await http.get(base + "?message_id=00000000-0000-0000-0000-000000000001")
        assert r.status_code == 404
        assert r.json()["success"] is False
        assert r.json()["error"] == {"code": 1003, "message": "Incomplete message not found"}
        msg = Message(session_id=sid, tenant_id=app_container.default_tenant_id, role="assistant")
        await app_container.session_service.messages.create(msg)
        r = await http.get(base + f"?message_id={msg.id}")
        assert r.status_code == 404
        assert r.json() == {"success": False, "error": {"code": 1003, "message": "No stream events found"}}
        saved = await app_container.session_service.get_message(app_container.default_tenant_id, msg.id)
        assert saved.is_completed
        assert saved.debug == {"stopped": "log_expired", "truncated": True}  # not left incomplete
        r = await http.get("/api/v1/sessions/continue-stream/00000000-0000-0000-0000-000000000000"
                           f"?message_id={msg.id}")
        assert r.status_code == 404
        assert r.json()["error"]["code"] == 1003
        assert (await http.get(base + f"?message_id={msg.id}&offset=x")).status_code == 400


async def test_restart_closes_turns_a_dead_process_left_open(make_settings: Callable[..., Settings]) -> None:
    from tests.conftest import started

    async with started(make_settings()) as first:
        sess = await first.session_service.create(first.default_tenant_id)
        old = utcnow() - timedelta(seconds=first.settings.stream_ttl_seconds + 60)
        msg = Message(session_id=sess.id, tenant_id=first.default_tenant_id, role="assistant", created_at=old)
        recent = Message(session_id=sess.id, tenant_id=first.default_tenant_id, role="assistant")
        await first.session_service.messages.create(msg)
        await first.session_service.messages.create(recent)
    async with started(make_settings()) as second:
        saved = await second.session_service.get_message(second.default_tenant_id, msg.id)
        assert saved.is_completed
        assert saved.debug == {"stopped": "interrupted", "truncated": True}  # the text died with the process
        running_elsewhere = await second.session_service.get_message(second.default_tenant_id, recent.id)
        assert not running_elsewhere.is_completed  # may belong to another live process on this database


class TestStop:
    async def test_stop_mid_stream_saves_partial_without_fallback(self, http: httpx.AsyncClient,
                                                                  app_container: Any) -> None:
        gate = asyncio.Event()
        runner = ScriptedRunner(gate=gate)
        app_container.runners.quick = runner
        sid = await session(http)
        async with http.stream("POST", f"/api/v1/knowledge-chat/{sid}", json={"query": "q"}) as r:
            it = frames(r)
            seen = await first_answer(it)
            mid = seen[0]["assistant_message_id"]
            stop = await http.post(f"/api/v1/sessions/{sid}/stop", json={"message_id": mid})
            assert stop.status_code == 200
            assert stop.json() == {"success": True, "message": "Generation stopped"}
            rest = [f async for f in it if f is not None]
        assert rest[-1] == {"id": seen[0]["id"], "response_type": "stop",
                            "content": "Generation stopped by user",
                            "done": True}
        assert "complete" not in [f["response_type"] for f in rest]
        partial = "".join(f["content"] for f in seen + rest if f["response_type"] == "answer")
        assert partial
        assert EXPANDED.startswith(partial)
        assert partial != EXPANDED
        await app_container.chat_service.wait_idle()
        bot = (await http.get(f"/api/v1/messages/{sid}/load")).json()["data"][-1]
        assert bot["is_completed"] is True
        assert bot["is_fallback"] is False
        assert bot["content"] == partial
        assert bot["knowledge_references"]
        again = await http.post(f"/api/v1/sessions/{sid}/stop", json={"message_id": mid})
        assert again.json() == {"success": True, "message": "Message already completed"}
        replay = parse_sse((await http.get(f"/api/v1/sessions/continue-stream/{sid}",
                                           params={"message_id": mid})).content)
        assert replay.frames[-1]["response_type"] == "stop"
        assert replay.frames[-1]["content"] == ""
        assert replay.frames[-1]["data"]["reason"] == "user_requested"

    async def test_stop_errors(self, http: httpx.AsyncClient, app_container: Any) -> None:
        sid, other = await session(http), await session(http)
        url = f"/api/v1/sessions/{sid}/stop"
        for body in ({}, {"message_id": ""}, {"message_id": 5}):
            r = await http.post(url, json=body)
            assert r.status_code == 400
            assert r.json()["success"] is False
            assert r.json()["error"] == {"code": 1000, "message": "message_id is required"}
        r = await http.post(url, content=b"{oops")
        assert r.status_code == 400
        assert r.json()["error"]["message"] == "Malformed JSON body"
        r = await http.post(url, json={"message_id": "00000000-0000-0000-0000-000000000009"})
        assert r.status_code == 404
        assert r.json() == {"success": False, "error": {"code": 1003, "message": "Message not found"}}
        msg = Message(session_id=other, tenant_id=app_container.default_tenant_id, role="assistant")
        await app_container.session_service.messages.create(msg)
        r = await http.post(url, json={"message_id": msg.id})
        assert r.status_code == 403
        assert r.json()["success"] is False
        assert r.json()["error"] == {"code": 1002, "message": "Message does not belong to this session"}

    async def test_stop_of_an_orphaned_turn_ends_it_from_the_log(self, http: httpx.AsyncClient,
                                                                 app_container: Any) -> None:
        sid = await session(http)
        msg = Message(session_id=sid, tenant_id=app_container.default_tenant_id, role="assistant",
                      request_id="orphan")
        await app_container.session_service.messages.create(msg)
        log = app_container.stream_log
        await log.append(sid, msg.id, StreamEvent(type="agent_query", done=True))
        await log.append(sid, msg.id, StreamEvent(type="answer", content="half an ans"))
        r = await http.post(f"/api/v1/sessions/{sid}/stop", json={"message_id": msg.id})
        assert r.json() == {"success": True, "message": "Generation stopped"}
        saved = await app_container.session_service.get_message(app_container.default_tenant_id, msg.id)
        assert saved.is_completed
        assert saved.content == "half an ans"
        assert not saved.is_fallback
        assert (await log.read(sid, msg.id))[-1].type == "stop"


class TestConnection:
    async def test_disconnect_is_not_a_stop(self, http: httpx.AsyncClient, app_container: Any) -> None:
        gate = asyncio.Event()
        app_container.runners.quick = ScriptedRunner(gate=gate)
        sid = await session(http)
        async with http.stream("POST", f"/api/v1/knowledge-chat/{sid}", json={"query": "q"}) as r:
            seen = await first_answer(frames(r))
        mid = seen[0]["assistant_message_id"]  # the client has gone
        assert app_container.chat_service.is_running(mid)
        gate.set()
        await app_container.chat_service.wait_idle()
        assert not app_container.chat_service.is_running(mid)  # a finished turn is forgotten
        bot = (await http.get(f"/api/v1/messages/{sid}/load")).json()["data"][-1]
        assert bot["is_completed"]
        assert bot["content"] == EXPANDED
        replay = parse_sse((await http.get(f"/api/v1/sessions/continue-stream/{sid}",
                                           params={"message_id": mid})).content)
        assert replay.types[-1] == "complete"

    async def test_running_turn_has_an_empty_incomplete_assistant_row(self, http: httpx.AsyncClient,
                                                                      app_container: Any) -> None:
        gate = asyncio.Event()
        app_container.runners.quick = ScriptedRunner(gate=gate)
        sid = await session(http)
        async with http.stream("POST", f"/api/v1/knowledge-chat/{sid}", json={"query": "q"}) as r:
            it = frames(r)
            await first_answer(it)
            msgs = (await http.get(f"/api/v1/messages/{sid}/load")).json()["data"]
            assert [m["role"] for m in msgs] == ["user", "assistant"]
            assert msgs[1]["is_completed"] is False
            assert msgs[1]["content"] == ""
            gate.set()
            [f async for f in it]

    async def test_keepalive_comments_while_idle(self, app_container: Any) -> None:
        """The keep-alive clock is the test's (no timer has to fire within a few ms on a loaded machine): the
        interval "elapses" once the turn is idle at the gate, after the first answer delta."""
        gate = asyncio.Event()
        runner = app_container.runners.quick = ScriptedRunner(gate=gate)
        log = ManualHeartbeatLog(app_container.stream_log)
        kinds: list[str] = []
        # the SSE route follows the services' log: serve these services with the manual clock in front of it
        async with live_client(dataclasses.replace(app_container, stream_log=log)) as http:
            sid = await session(http)
            async with http.stream("POST", f"/api/v1/knowledge-chat/{sid}", json={"query": "q"}) as r:
                async for f in frames(r):
                    if f is None:
                        kinds.append(":")
                        gate.set()  # the turn is idle at the gate: a comment arrived instead of a frame
                    else:
                        kinds.append(f["response_type"])
                        if f["response_type"] == "answer" and not gate.is_set():
                            await runner.started.wait()
                            assert log.heartbeats == [app_container.settings.sse_keepalive_seconds]
                            log.tick()
        assert ":" in kinds
        assert kinds[-1] == "complete"
        assert kinds.index(":") > kinds.index("answer")


@pytest.fixture(params=["memory", pytest.param("redis", marks=[pytest.mark.redis])])
async def any_log_container(request: pytest.FixtureRequest,
                            make_settings: Callable[..., Settings]) -> AsyncIterator[Any]:
    from tests.conftest import REDIS_URL, started

    extra: dict[str, Any] = {}
    if request.param == "redis":
        extra = {"stream_log": "redis", "redis_url": REDIS_URL,
                 "redis_prefix": request.getfixturevalue("redis_prefix")}
    async with started(make_settings(sse_keepalive_seconds=0.05, **extra)) as c:
        yield c


async def test_resume_at_or_past_complete_closes(any_log_container: Any) -> None:
    """Issue 20, 6a: a cursor at ``complete`` or past the log (offset=9999) used to get keep-alives until the
    log's TTL; it now gets an empty 200 stream. A cursor before ``complete`` still gets it."""
    any_log_container.runners.quick = ScriptedRunner()
    async with live_client(any_log_container) as http:
        sid = await session(http)
        async with http.stream("POST", f"/api/v1/knowledge-chat/{sid}", json={"query": "q"}) as r:
            live = [f async for f in frames(r) if f is not None]
        assert live[-1]["response_type"] == "complete"
        end = len(live) - 1  # the seq of complete
        url = f"/api/v1/sessions/continue-stream/{sid}?message_id={live[0]['assistant_message_id']}"
        at_end, past_end, before_end = await asyncio.wait_for(asyncio.gather(
            http.get(url, headers={"Last-Event-ID": str(end)}), http.get(url + "&offset=9999"),
            http.get(url, headers={"Last-Event-ID": str(end - 1)})), timeout=10)
    assert (at_end.status_code, at_end.content) == (200, b"")
    assert (past_end.status_code, past_end.content) == (200, b"")
    assert parse_sse(before_end.content).frames == live[-1:]
