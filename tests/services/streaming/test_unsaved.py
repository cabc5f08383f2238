"""Unsaved turns: the runner's events come out expanded as a stored turn's would, nothing is stored, and a
reader that leaves cancels the runner."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from knora.ports.turn import HistoryTurn
from knora.root import Services
from knora.services.streaming.intake import ChatBody
from tests.polling import eventually
from tests.services.streaming.runners import CHUNK_1, EXPANDED, ScriptedRunner

pytestmark = pytest.mark.integration


async def test_events_are_expanded_and_nothing_is_stored(sqlite_container: Services) -> None:
    c = sqlite_container
    runner = ScriptedRunner(thinking="hmm")
    c.runners.quick = runner
    history = [HistoryTurn(query="before", answer=f'said <kb doc="Manual" chunk_id="{CHUNK_1}" />')]
    turn = await c.chat_service.start_unsaved(c.default_tenant_id, ChatBody(query="What is Knora?"),
                                              str(uuid.uuid4()), "knowledge", history)
    events = [e async for e in turn.events()]
    kinds = [e.type for e in events]
    assert kinds[-1] == "complete"
    assert {"tool_call", "references", "thinking", "answer"} <= set(kinds)
    assert "".join(e.content for e in events if e.type == "answer") == EXPANDED
    assert turn.result is not None
    assert turn.result.fields["content"] == EXPANDED
    assert runner.requests[0].history == history
    assert runner.requests[0].query == "What is Knora?"
    sessions, total = await c.session_service.list_sessions(c.default_tenant_id, page=1, page_size=10)
    assert (sessions, total) == ([], 0)
    assert c.chat_service.unsaved.running == 0


async def test_a_reader_that_leaves_cancels_the_runner(sqlite_container: Services) -> None:
    c = sqlite_container
    gate = asyncio.Event()  # never set: the runner waits mid-answer until cancelled
    runner = ScriptedRunner(gate=gate)
    c.runners.quick = runner
    turn = await c.chat_service.start_unsaved(c.default_tenant_id, ChatBody(query="q"), str(uuid.uuid4()),
                                              "knowledge", [])
    events = turn.events()
    async for event in events:
        if event.type == "answer":
            break
    await events.aclose()
    assert await eventually(lambda: not turn.running)
    assert turn.result is None  # cancelled: no final fields, no complete entry
    assert c.chat_service.unsaved.running == 0


async def test_an_empty_query_is_refused_before_anything_runs(sqlite_container: Services) -> None:
    from knora.domain.errors import BadRequest

    with pytest.raises(BadRequest):
        await sqlite_container.chat_service.start_unsaved(sqlite_container.default_tenant_id,
                                                          ChatBody(query="  "), "r", "knowledge", [])


async def test_an_idle_turn_yields_keep_alives_and_loses_nothing(sqlite_container: Services) -> None:
    c = sqlite_container
    gate = asyncio.Event()
    c.runners.quick = ScriptedRunner(gate=gate)
    turn = await c.chat_service.start_unsaved(c.default_tenant_id, ChatBody(query="q"), str(uuid.uuid4()),
                                              "knowledge", [])
    seen: list[str | None] = []
    answer: list[str] = []
    async for event in turn.events(heartbeat=0.01):
        seen.append(None if event is None else event.type)
        if event is None:
            gate.set()  # the runner was idle long enough for a keep-alive: let it finish
        elif event.type == "answer":
            answer.append(event.content)
    assert None in seen
    assert seen[-1] == "complete"
    assert "".join(answer) == EXPANDED  # every delta arrived, none lost to a keep-alive's timeout
