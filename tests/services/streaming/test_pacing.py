"""The process-wide delta pacer: the hold grows with the streams writing text, up to its cap."""

from __future__ import annotations

import pytest

from knora.services.streaming.pacing import DeltaPacer

pytestmark = pytest.mark.unit


def test_hold_is_streams_over_budget_capped() -> None:
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
    assert pacer.streams == 1 and pacer.hold == pytest.approx(0.001)
    pacer.leave()
    pacer.leave()  # one leave too many never goes below zero
    assert pacer.streams == 0 and pacer.hold == 0.0


def test_budget_zero_never_holds() -> None:
    pacer = DeltaPacer(frame_budget=0)
    for _ in range(10_000):
        pacer.enter()
    assert pacer.hold == 0.0


def test_negative_settings_are_rejected() -> None:
    with pytest.raises(ValueError):
        DeltaPacer(frame_budget=-1)
    with pytest.raises(ValueError):
        DeltaPacer(max_hold_s=-0.5)
