"""Bulk loops: a long one freezes the collector's generations as it goes (a short one never does), and in a
worker thread it steps aside while a chat turn runs, never for longer than it worked."""

from __future__ import annotations

import asyncio
import gc
import threading
import time
from collections.abc import Callable

import pytest

from knora.pacing import MAX_PAUSE_SECONDS, Foreground, sheltered

pytestmark = pytest.mark.unit


def test_a_long_loop_freezes_what_it_made_and_a_short_one_does_not() -> None:
    before = gc.get_freeze_count()
    kept = [{"n": n} for n in sheltered(range(5), every=10)]  # fewer than ``every``: nothing frozen
    assert gc.get_freeze_count() == before
    assert [k["n"] for k in kept] == list(range(5))
    made = [{"n": n} for n in sheltered(range(25), every=10)]
    assert gc.get_freeze_count() > before  # the records made so far are out of the collections' walks
    assert [m["n"] for m in made] == list(range(25))


class _Recorder(Foreground):
    def __init__(self) -> None:
        super().__init__()
        self.budgets: list[float] = []

    def wait_quiet(self, seconds: float) -> bool:
        self.budgets.append(seconds)
        return super().wait_quiet(seconds)


def _run_in_thread(fn: Callable[[], float]) -> float:
    out: list[float] = []
    t = threading.Thread(target=lambda: out.append(fn()))
    t.start()
    t.join(120)
    return out[0]


def test_a_loop_in_a_worker_thread_steps_aside_for_a_turn_but_never_longer_than_it_worked() -> None:
    fg = _Recorder()
    release = fg.hold()

    def loop() -> float:
        start = time.perf_counter()
        total = 0
        for n in sheltered(range(20_000), every=10**9, check_every=100, foreground=fg):
            total += sum(range(n % 50))  # some work between two looks
        return time.perf_counter() - start

    elapsed = _run_in_thread(loop)
    release()
    assert fg.budgets  # it paused while the turn ran
    assert all(0 < b <= MAX_PAUSE_SECONDS for b in fg.budgets)
    assert sum(fg.budgets) <= elapsed  # the pauses' budgets never exceed the time the loop had worked


def test_no_pause_without_a_turn_or_on_the_event_loop() -> None:
    fg = _Recorder()
    assert _run_in_thread(lambda: float(len(list(sheltered(range(5_000), check_every=10, foreground=fg)))))
    assert fg.budgets == []  # nobody was waiting

    async def on_loop() -> int:
        release = fg.hold()
        try:
            return len(list(sheltered(range(5_000), check_every=10, foreground=fg)))
        finally:
            release()

    assert asyncio.run(on_loop()) == 5_000
    assert fg.budgets == []  # the loop's own thread is never put to sleep


def test_a_hold_is_released_once() -> None:
    fg = Foreground()
    first, second = fg.hold(), fg.hold()
    assert fg.busy
    first()
    first()  # a second call changes nothing
    assert fg.busy
    second()
    assert not fg.busy
    assert fg.wait_quiet(0)
