"""Parsing the text ReAct protocol."""

from __future__ import annotations

import pytest

from knora.services.agent import react_text
from knora.services.agent.arguments import normalize_call_id, parse_arguments, repair_json

pytestmark = pytest.mark.unit


def test_actions_and_final_answer() -> None:
    thought, calls, final = react_text.parse(
        'Thought: two lookups\nAction: a\nAction Input: {"q": "x {y}"}\nAction: b\nAction Input: {}', 0)
    assert thought == "two lookups"
    assert final is None
    assert [(c.name, c.arguments) for c in calls] == [("a", '{"q": "x {y}"}'), ("b", "{}")]
    assert react_text.parse("Thought: ok\nFinal Answer: 42", 1) == ("ok", [], "42")
    assert react_text.parse("just text", 1) == ("", [], "just text")


def test_argument_repair() -> None:
    assert parse_arguments("{'q': 'x'}") == {"q": "x"}
    assert parse_arguments('{q: "x", }') == {"q": "x"}
    assert parse_arguments('{"a": [1, 2') == {"a": [1, 2]}
    assert parse_arguments("") == {}
    with pytest.raises(ValueError):  # noqa: PT011 - the type is the contract, not the message
        parse_arguments("[1, 2]")
    assert repair_json('```json\n{"a": 1}\n```') == '{"a": 1}'


def test_call_ids() -> None:
    assert normalize_call_id("call:1/x", "t", 0) == "call1x"
    assert normalize_call_id("", "t", 0).startswith("call_")
    assert len(normalize_call_id("", "t", 0)) == 11
    assert len(normalize_call_id("x" * 100, "t", 0)) <= 64
