"""The event bus: dispatch order, and the pacing of text deltas (merged under a hold, never lost or
reordered)."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable

import pytest

from knora.domain.stream import BusEvent, Event
from knora.services.streaming import bus as bus_module
from knora.services.streaming.bus import EventBus
from knora.services.streaming.pacing import DeltaPacer
from knora.settings import Settings
from tests.polling import eventually
from tests.services.streaming.runners import EXPANDED, RESULTS, ScriptedRunner

pytestmark = pytest.mark.unit

Seen = list[tuple[str, str, bool, str]]  # (type, content, done, data event_id)


def recording(pacer: DeltaPacer | None) -> tuple[EventBus, Seen]:
    bus = EventBus(pacer)
    seen: Seen = []

    async def record(ev: Event) -> None:
        seen.append((str(ev.type), str(ev.data.get("content", "")), bool(ev.data.get("done")),
                     str(ev.data.get("event_id", ""))))

    bus.subscribe(None, record)
    return bus, seen


def held_for(seconds: float) -> DeltaPacer:
    """A pacer whose hold is ``seconds`` once one stream writes (budget 1 event/s, cap = seconds)."""
    return DeltaPacer(frame_budget=1, max_hold_s=seconds)


async def answer(bus: EventBus, text: str, eid: str = "a", done: bool = False) -> None:
    await bus.emit(BusEvent.FINAL_ANSWER, {"content": text, "done": done, "event_id": eid}, event_id=eid)


async def test_without_a_pacer_every_delta_is_dispatched_at_once() -> None:
    bus, seen = recording(None)
    for piece in ("a", "b", "c"):
        await answer(bus, piece)
    assert [s[1] for s in seen] == ["a", "b", "c"]


async def test_budget_zero_means_unpaced() -> None:
    bus, seen = recording(DeltaPacer(frame_budget=0))
    for piece in ("a", "b", "c"):
        await answer(bus, piece)
    assert [s[1] for s in seen] == ["a", "b", "c"]


async def test_deltas_within_the_hold_are_merged_after_an_immediate_first() -> None:
    pacer = held_for(30.0)
    bus, seen = recording(pacer)
    await answer(bus, "The ")
    assert seen == [("final_answer", "The ", False, "a")]  # the first delta of a turn is never held
    for piece in ("quick ", "brown ", "fox"):
        await answer(bus, piece)
    assert len(seen) == 1
    assert pacer.streams == 1
    await answer(bus, "", done=True)  # the done mark releases the held text first
    assert seen == [("final_answer", "The ", False, "a"), ("final_answer", "quick brown fox", False, "a"),
                    ("final_answer", "", True, "a")]
    await bus.close()
    assert pacer.streams == 0


async def test_any_other_event_releases_held_text_before_it() -> None:
    bus, seen = recording(held_for(30.0))
    await answer(bus, "Let me ")
    await answer(bus, "check.")
    await bus.emit(BusEvent.TOOL_CALL, {"tool_call_id": "t1", "tool_name": "grep_chunks"})
    assert [(s[0], s[1]) for s in seen] == [("final_answer", "Let me "), ("final_answer", "check."),
                                            ("tool_call", "")]


async def test_a_delta_of_another_event_id_or_channel_releases_first() -> None:
    bus, seen = recording(held_for(30.0))
    await answer(bus, "a1")
    await answer(bus, "a2")
    await bus.emit(BusEvent.THOUGHT, {"content": "t1", "done": False, "event_id": "t"}, event_id="t")
    await answer(bus, "b1", eid="b")
    await bus.flush()
    assert [(s[0], s[1], s[3]) for s in seen] == [("final_answer", "a1", "a"), ("final_answer", "a2", "a"),
                                                  ("thought", "t1", "t"), ("final_answer", "b1", "b")]


async def test_the_first_delta_after_the_hold_goes_out_with_the_held_ones(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bus_module, "TIMER_SLACK", 1000.0)  # only deltas release here, never the timer
    bus, seen = recording(held_for(0.02))
    await answer(bus, "one ")
    await answer(bus, "two ")
    await asyncio.sleep(0.05)
    await answer(bus, "three")
    assert [s[1] for s in seen] == ["one ", "two three"]


async def test_a_paused_producer_has_its_held_text_released_by_the_timer() -> None:
    bus, seen = recording(held_for(0.02))
    await answer(bus, "one ")
    await answer(bus, "two")
    assert len(seen) == 1
    await eventually(lambda: len(seen) == 2)
    assert [s[1] for s in seen] == ["one ", "two"]
    await answer(bus, "", done=True)  # after a timer release the order still holds
    assert seen[-1] == ("final_answer", "", True, "a")


async def test_after_close_text_is_dispatched_unpaced() -> None:
    pacer = held_for(30.0)
    bus, seen = recording(pacer)
    await answer(bus, "x")
    await answer(bus, "y")
    await bus.close()
    assert [s[1] for s in seen] == ["x", "y"]
    assert pacer.streams == 0
    await answer(bus, "late1")
    await answer(bus, "late2")
    assert [s[1] for s in seen][-2:] == ["late1", "late2"]


@pytest.mark.parametrize("seed", range(8))
async def test_random_interleavings_keep_every_character_in_order(seed: int,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Text of several event ids and channels, other events and pauses, at random: per event id the text is
    exactly what was emitted, and the events of the bus keep their order."""
    rng = random.Random(seed)
    monkeypatch.setattr(bus_module, "TIMER_SLACK", rng.choice([1.0, 1.5, 3.0]))
    bus, seen = recording(held_for(rng.choice([0.0005, 0.002, 0.01])))
    sent: dict[str, list[str]] = {}
    text_before: dict[str, dict[str, int]] = {}  # per tool call: how much text of each event id preceded it
    for i in range(300):
        roll = rng.random()
        if roll < 0.75:
            eid = rng.choice(["a", "a", "a", "b"])
            piece = "".join(rng.choice("xyz <>/") for _ in range(rng.randint(1, 4)))
            kind = BusEvent.FINAL_ANSWER if eid == "a" else BusEvent.THOUGHT
            sent.setdefault(eid, []).append(piece)
            await bus.emit(kind, {"content": piece, "done": False, "event_id": eid}, event_id=eid)
        elif roll < 0.85:
            tool = f"tool-{i}"
            text_before[tool] = {e: len("".join(p)) for e, p in sent.items()}
            await bus.emit(BusEvent.TOOL_CALL, {"tool_call_id": tool, "content": tool})
        else:
            await asyncio.sleep(rng.choice([0, 0.001, 0.004]))
    await bus.close()
    for eid, pieces in sent.items():
        assert "".join(s[1] for s in seen if s[3] == eid) == "".join(pieces)
    got: dict[str, int] = {}
    tools = []
    for kind, content, _, eid in seen:  # at each tool call, exactly the text emitted before it was dispatched
        if kind == "tool_call":
            tools.append(content)
            assert {e: n for e, n in got.items() if n} == {e: n for e, n in text_before[content].items() if n}
        else:
            got[eid] = got.get(eid, 0) + len(content)
    assert tools == list(text_before)


async def test_a_paced_turn_streams_fewer_entries_and_saves_exactly_what_was_streamed(
        make_settings: Callable[..., Settings]) -> None:
    from knora.services.streaming.intake import ChatBody
    from tests.conftest import started

    async with started(make_settings(stream_frame_budget=1, stream_max_hold_ms=40)) as c:
        c.runners.quick = ScriptedRunner(chunk=2, delay=0.004)
        s = await c.session_service.create(c.default_tenant_id)
        turn = await c.chat_service.start(c.default_tenant_id, s.id, ChatBody(query="q"), "rid")
        await c.chat_service.wait_idle()
        events = await c.stream_log.read(s.id, turn.assistant_message_id)
        answers = [e for e in events if e.type == "answer"]
        deltas = len(range(0, len(ScriptedRunner().answer), 2))
        assert 2 <= len(answers) < deltas / 2  # merged: far fewer entries than the model's deltas
        assert "".join(e.content for e in answers) == EXPANDED
        types = [e.type for e in events]
        assert answers[-1].done
        assert types.index("complete") > types.index("answer")
        saved = await c.session_service.get_message(c.default_tenant_id, turn.assistant_message_id)
        assert saved.content == EXPANDED
        assert len(saved.knowledge_references) == len(RESULTS)
        assert c.chat_service.pacer.streams == 0


async def test_a_stop_saves_the_held_text_that_the_log_also_got(make_settings: Callable[...,
                                                                                        Settings]) -> None:
    from knora.ports.turn import TurnContext, TurnOutcome, TurnRequest
    from knora.services.streaming.intake import ChatBody
    from tests.conftest import started

    gate = asyncio.Event()

    class Burst:
        """Five deltas at once (four of them held), then waits to be stopped."""

        async def run(self, req: TurnRequest, ctx: TurnContext) -> TurnOutcome:
            for piece in ("Held ", "text ", "is ", "never ", "lost."):
                await ctx.bus.emit(BusEvent.FINAL_ANSWER, {"content": piece, "done": False, "event_id": "a"},
                                   event_id="a")
            gate.set()
            await asyncio.Event().wait()
            raise AssertionError("not reached")

    async with started(make_settings(stream_frame_budget=1, stream_max_hold_ms=30_000)) as c:
        c.runners.quick = Burst()
        s = await c.session_service.create(c.default_tenant_id)
        turn = await c.chat_service.start(c.default_tenant_id, s.id, ChatBody(query="q"), "rid")
        await gate.wait()
        mid = turn.assistant_message_id
        assert [e.content for e in await c.stream_log.read(s.id, mid) if e.type == "answer"] == ["Held "]
        assert await c.chat_service.stop(c.default_tenant_id, s.id, mid) == "Generation stopped"
        events = await c.stream_log.read(s.id, mid)
        streamed = "".join(e.content for e in events if e.type == "answer")
        assert streamed == "Held text is never lost."
        assert events[-1].type == "stop"
        saved = await c.session_service.get_message(c.default_tenant_id, mid)
        assert saved.is_completed
        assert saved.content == streamed
        assert not saved.is_fallback


async def test_an_event_waits_for_a_timer_release_still_in_the_handlers() -> None:
    """A handler that awaits (a Redis append, say) while the timer releases held text: what the producer emits
    next reaches the handlers only after that release is through, even without a lock in the handler."""
    bus = EventBus(held_for(0.01))
    calls: list[str] = []

    async def slow(ev: Event) -> None:
        calls.append(f"start {ev.data.get('content') or ev.type}")
        if ev.data.get("content") == "two":
            await asyncio.sleep(0.05)
        calls.append(f"end {ev.data.get('content') or ev.type}")

    bus.subscribe(None, slow)
    await answer(bus, "one")
    await answer(bus, "two")  # held; the timer releases it 15 ms later, in a task
    await eventually(lambda: "start two" in calls, interval=0.005)
    await bus.emit(BusEvent.TOOL_CALL, {"tool_call_id": "t"})
    assert calls == ["start one", "end one", "start two", "end two", "start tool_call", "end tool_call"]
