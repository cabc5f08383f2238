"""Issue 20 item 10: a stop that loses the race with the turn's completion says so ("Message already
completed", WeKnora's own answer for a finished turn) instead of "Generation stopped"."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from knora.domain.stream import BusEvent
from knora.ports.turn import TurnContext, TurnOutcome, TurnRequest
from knora.services.streaming.intake import ChatBody
from knora.services.streaming.service import ALREADY_COMPLETED, STOPPED
from knora.settings import Settings
from tests.conftest import started


class Finisher:
    """Answers one delta, then completes as soon as it is released (never looks at the stop signal)."""

    def __init__(self) -> None:
        self.answering = asyncio.Event()
        self.release = asyncio.Event()

    async def run(self, req: TurnRequest, ctx: TurnContext) -> TurnOutcome:
        await ctx.bus.emit(BusEvent.FINAL_ANSWER, {"content": "All done.", "done": False, "event_id": "a"},
                           event_id="a")
        self.answering.set()
        await self.release.wait()
        return TurnOutcome(answer="All done.")


async def test_a_stop_after_the_turn_completed_says_already_completed(
        make_settings: Callable[..., Settings], monkeypatch: pytest.MonkeyPatch) -> None:
    async with started(make_settings()) as c:
        runner = Finisher()
        c.runners.quick = runner
        s = await c.session_service.create(c.default_tenant_id)
        turn = await c.chat_service.start(c.default_tenant_id, s.id, ChatBody(query="q"), "rid")
        mid = turn.assistant_message_id
        await runner.answering.wait()
        request_stop = c.chat_service.stops.request_stop

        async def late(message_id: str) -> None:
            # the race: the message was read as running, then the turn completed, then the stop arrived
            runner.release.set()
            while not any(e.type == "complete" for e in await c.stream_log.read(s.id, mid)):
                await asyncio.sleep(0.01)
            await request_stop(message_id)

        monkeypatch.setattr(c.chat_service.stops, "request_stop", late)
        assert await c.chat_service.stop(c.default_tenant_id, s.id, mid) == ALREADY_COMPLETED
        kinds = [e.type for e in await c.stream_log.read(s.id, mid)]
        assert "complete" in kinds
        assert "stop" not in kinds
        message = await c.session_service.get_message(c.default_tenant_id, mid)
        assert message is not None
        assert message.is_completed
        assert message.content == "All done."


async def test_a_stop_that_takes_effect_says_stopped(make_settings: Callable[..., Settings]) -> None:
    async with started(make_settings()) as c:
        runner = Finisher()  # never released: only the stop ends it
        c.runners.quick = runner
        s = await c.session_service.create(c.default_tenant_id)
        turn = await c.chat_service.start(c.default_tenant_id, s.id, ChatBody(query="q"), "rid")
        await runner.answering.wait()
        assert await c.chat_service.stop(c.default_tenant_id, s.id, turn.assistant_message_id) == STOPPED
        assert (await c.stream_log.read(s.id, turn.assistant_message_id))[-1].type == "stop"
