"""The one JSON-from-model-output extractor: one order of readings, the caller's acceptance rule."""

from __future__ import annotations

import pytest

from knora.domain.model_json import extract_json, extract_object, outermost_span, repair_json


@pytest.mark.parametrize(("text", "expected"), [
    ('{"a": 1}', {"a": 1}),
    ('Sure:\n```json\n{"a": 1}\n```\nDone.', {"a": 1}),
    ('```\n{"a": 1}', {"a": 1}),  # unterminated fence
    ('noise {"a": {"b": "}"}} tail', {"a": {"b": "}"}}),  # braces inside strings do not end the span
    ('[1, 2] then {"a": 1}', {"a": 1}),  # a list is skipped when an object is wanted
    ("no json here", None),
])
def test_extract_object(text: str, expected: object) -> None:
    assert extract_object(text) == expected


def test_lists_when_the_caller_takes_them() -> None:
    assert extract_json('```json\n[{"e": 1}]\n```', accept=lambda v: isinstance(v, dict | list)) == [{"e": 1}]
    assert extract_json('"just a string"', accept=lambda v: isinstance(v, dict | list)) is None


def test_repair_is_the_last_resort() -> None:
    assert extract_json("{q: 'x', }") is None
    assert extract_json("{q: 'x', }", repair=True) == {"q": "x"}
    assert extract_json('{"a": [1, 2', repair=True) == {"a": [1, 2]}
    assert repair_json('```json\n{"a": 1}\n```') == '{"a": 1}'


def test_outermost_span() -> None:
    assert outermost_span('x [1, [2]] y') == "[1, [2]]"
    assert outermost_span("{ never closed") is None
