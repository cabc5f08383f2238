"""The stream handler: bus events → log entries (spec §5.3), citations across deltas, preambles, shutdown."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from knora.adapters.stream.memory import MemoryStreamLog
from knora.domain.stream import BusEvent
from knora.services.citations.registry import ReferenceRegistry
from knora.services.streaming.bus import EventBus
from knora.services.streaming.handler import StreamHandler
from knora.settings import Settings
from tests.polling import eventually
from tests.services.streaming.runners import ANSWER, EXPANDED, RESULTS, ScriptedRunner

pytestmark = pytest.mark.unit


def make() -> tuple[EventBus, StreamHandler, MemoryStreamLog]:
    log = MemoryStreamLog()
    reg = ReferenceRegistry()
    reg.register_search_results(RESULTS)
    handler = StreamHandler(log, "s", "m", reg)
    bus = EventBus()
    handler.subscribe(bus)
    return bus, handler, log


@pytest.mark.parametrize("cut", range(len(ANSWER) + 1))
async def test_answer_split_at_every_point_expands_identically(cut: int) -> None:
    bus, handler, log = make()
    for piece in (ANSWER[:cut], ANSWER[cut:]):
        await bus.emit(BusEvent.FINAL_ANSWER, {"content": piece, "done": False, "event_id": "a"})
    await bus.emit(BusEvent.FINAL_ANSWER, {"content": "", "done": True, "event_id": "a"})
    events = await log.read("s", "m")
    assert "".join(e.content for e in events) == EXPANDED == handler.final_answer
    assert all("<ref" not in e.content for e in events)
    assert events[-1].done
    assert "duration_ms" in events[-1].data


async def test_tool_call_supersedes_preamble_and_times_tools() -> None:
    bus, handler, log = make()
    await bus.emit(BusEvent.FINAL_ANSWER, {"content": "Let me search…", "done": True, "event_id": "p"})
    await bus.emit(BusEvent.TOOL_CALL, {"tool_call_id": "t1", "tool_name": "grep_chunks",
                                        "arguments": {"q": 1}})
    await bus.emit(BusEvent.TOOL_RESULT, {"tool_call_id": "t1", "tool_name": "grep_chunks", "success": False,
                                          "error": "bad pattern"})
    await bus.emit(BusEvent.FINAL_ANSWER, {"content": 'Final<ref id="c2"/>', "done": True, "event_id": "f"})
    events = await log.read("s", "m")
    assert [e.type for e in events] == ["answer", "tool_call", "error", "answer"]
    assert events[2].content == "bad pattern"
    assert events[2].done is False
    assert events[2].data["duration_ms"] >= 0
    assert events[2].data["tool_call_id"] == "t1"
    assert handler.final_answer.startswith("Final<kb ")
    assert "Let me search" not in handler.final_answer
    assert handler.tool_calls[0]["result"]["success"] is False


async def test_references_accumulate_without_duplicates() -> None:
    bus, handler, log = make()
    await bus.emit(BusEvent.REFERENCES, {"references": [RESULTS[0]]})
    await bus.emit(BusEvent.REFERENCES, {"references": [r.model_dump() for r in RESULTS]})
    events = await log.read("s", "m")
    assert [len(e.data["references"]) for e in events] == [1, 2]
    assert [r["id"] for r in handler.references] == [r.id for r in RESULTS]


async def test_flush_all_releases_held_text_and_drops_partial_tags() -> None:
    bus, handler, log = make()
    await bus.emit(BusEvent.FINAL_ANSWER, {"content": "Half <", "done": False, "event_id": "a"})
    await bus.emit(BusEvent.THOUGHT, {"content": 'think <ref id="c1"', "done": False, "event_id": "t"})
    await handler.flush_all()
    events = await log.read("s", "m")
    assert "".join(e.content for e in events if e.type == "answer") == "Half <"
    assert "".join(e.content for e in events if e.type == "thinking") == "think "


@pytest.mark.integration
async def test_shutdown_mid_turn_saves_partial_and_ends_the_log(make_settings: Callable[...,
                                                                                        Settings]) -> None:
    import asyncio

    from knora.root import build_services
    from knora.services.streaming.intake import ChatBody

    c: Any = await build_services(make_settings())
    gate = asyncio.Event()
    runner = ScriptedRunner(gate=gate)
    c.runners.quick = runner
    s = await c.session_service.create(c.default_tenant_id)
    turn = await c.chat_service.start(c.default_tenant_id, s.id, ChatBody(query="q"), "rid")
    await runner.started.wait()

    async def answered() -> bool:
        return any(e.type == "answer" for e in await c.stream_log.read(s.id, turn.assistant_message_id))

    await eventually(answered)
    events_log = c.stream_log
    await c.chat_service.close()
    events = await events_log.read(s.id, turn.assistant_message_id)
    assert events[-1].type == "stop"
    assert events[-1].data["reason"] == "shutdown"
    saved = await c.session_service.get_message(c.default_tenant_id, turn.assistant_message_id)
    assert saved.is_completed
    assert saved.content
    assert EXPANDED.startswith(saved.content)
    await c.aclose()
