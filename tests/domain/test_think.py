"""The one ``<think>`` splitter: streamed in order, whole-reply forms, history's closed-blocks-only rule."""

from __future__ import annotations

import pytest

from knora.domain.think import ThinkSplitter, drop_closed_think, split_think, strip_think


def test_segments_keep_stream_order_across_split_tags() -> None:
    s = ThinkSplitter()
    out = [seg for p in ["a<th", "ink>pl", "an</thi", "nk>b", "<"] for seg in s.segments(p)]
    out += s.flush_segments()
    assert out == [("text", "a"), ("think", "pl"), ("think", "an"), ("text", "b"), ("text", "<")]
    assert not s.inside


def test_feed_is_the_joined_segments() -> None:
    s = ThinkSplitter()
    assert s.feed("x<think>y") == ("x", "y")
    assert s.inside
    assert s.flush() == ("", "")


@pytest.mark.parametrize(("text", "answer", "reasoning"), [
    ("<think>plan</think>\n\nanswer", "answer", "plan"),
    ("<think>never closed", "", "never closed"),
    ("plain  ", "plain  ", ""),  # no reasoning: returned as is
    ("</think>stray", "</think>stray", ""),
    ("<think>a<think>b</think>c", "c", "a<think>b"),
])
def test_split_think(text: str, answer: str, reasoning: str) -> None:
    assert split_think(text) == (answer, reasoning)
    assert strip_think(text) == answer.strip()


def test_history_drops_only_closed_blocks() -> None:
    assert drop_closed_think("<think>x</think>answer") == "answer"
    assert drop_closed_think("answer <think>unclosed") == "answer <think>unclosed"
