"""The process-wide delta pacer: the hold grows with the streams writing text and with the loop's lag, up to a
cap."""

from __future__ import annotations

import time

import pytest

from knora.services.streaming import pacing
from knora.services.streaming.pacing import DeltaPacer
from tests.polling import eventually

pytestmark = pytest.mark.unit


async def test_hold_is_streams_over_budget_capped() -> None:
    pacer = DeltaPacer(frame_budget=1000, max_hold_s=0.1)
    assert pacer.hold == 0.0
    for _ in range(50):
        pacer.enter()
    assert pacer.hold == pytest.approx(0.05)  # 50 streams × 20 events/s = the budget
    for _ in range(500):
        pacer.enter()
    assert pacer.hold == pytest.approx(0.1)  # capped
    for _ in range(549):
        pacer.leave()
    assert pacer.streams == 1
    assert pacer.hold == pytest.approx(0.001)
    pacer.leave()
    pacer.leave()  # one leave too many never goes below zero
    assert pacer.streams == 0
    assert pacer.hold == 0.0


async def test_budget_zero_never_holds_and_runs_no_timer() -> None:
    pacer = DeltaPacer(frame_budget=0)
    for _ in range(10_000):
        pacer.enter()
    pacer.observe(1.0)
    assert pacer.hold == 0.0
    assert pacer._timer is None


async def test_loop_lag_or_saturation_grows_the_hold_and_their_end_lets_it_decay() -> None:
    pacer = DeltaPacer(frame_budget=1000, max_hold_s=0.25, lag_target_s=0.01)
    for _ in range(10):
        pacer.enter()
    base = pacer.hold
    assert base == pytest.approx(0.01)
    pacer.observe(0.007)  # between half the target and the target: unchanged
    assert pacer.hold == pytest.approx(base)
    for _ in range(3):
        pacer.observe(0.05)
    assert pacer.hold == pytest.approx(base * 1.5 ** 3)
    for _ in range(40):
        pacer.observe(0.5)
    assert pacer.hold == pytest.approx(0.25)  # never past the cap
    for _ in range(200):
        pacer.observe(0.0, busy=0.7)  # between the busy bounds: unchanged
    assert pacer.hold == pytest.approx(0.25)
    for _ in range(200):
        pacer.observe(0.0, busy=0.2)
    assert pacer.factor == 1.0
    assert pacer.hold == pytest.approx(base)
    pacer.observe(0.0, busy=0.95)  # a saturated loop grows it too, even when it runs its timers on time
    assert pacer.hold == pytest.approx(base * 1.5)
    for _ in range(10):
        pacer.leave()


async def test_the_lag_timer_runs_only_while_streams_write(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pacing, "TICK_S", 0.01)
    pacer = DeltaPacer(frame_budget=1000, lag_target_s=0.005)
    assert pacer._timer is None
    pacer.enter()
    assert pacer._timer is not None
    time.sleep(0.05)  # noqa: ASYNC251 - the loop is blocked on purpose: the next tick sees it late
    await eventually(lambda: pacer.factor > 1)
    assert pacer.factor > 1
    pacer.leave()
    assert pacer._timer is None
    assert pacer.factor == 1.0
    assert pacer.hold == 0.0
    pacer.enter()
    pacer.close()
    assert pacer._timer is None


def test_bad_settings_are_rejected() -> None:
    with pytest.raises(ValueError):  # noqa: PT011 - the type is the contract, not the message
        DeltaPacer(frame_budget=-1)
    with pytest.raises(ValueError):  # noqa: PT011 - the type is the contract, not the message
        DeltaPacer(max_hold_s=-0.5)
    with pytest.raises(ValueError):  # noqa: PT011 - the type is the contract, not the message
        DeltaPacer(lag_target_s=0)
