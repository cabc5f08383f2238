"""The contract checker itself: each way a Go client would fail on a value is reported, and values Go decodes
are not (so the contract suite can fail, and fails only for real mismatches)."""

from __future__ import annotations

import pytest

from tests.api.contract.go import ANY, BOOL, FLOAT, INT, STR, TIME, UINT, F, Map, Ptr, Slice, Struct, problems

ITEM = Struct("Item", {"name": F(STR), "note": F(STR, True)})
THING = Struct("Thing", {
    "id": F(STR), "count": F(INT), "owner": F(UINT), "score": F(FLOAT), "ok": F(BOOL), "at": F(TIME),
    "when": F(Ptr(TIME)), "tags": F(Slice(STR)), "meta": F(Map(STR)), "extra": F(ANY),
    "items": F(Slice(ITEM))})
GOOD = {"id": "a", "count": 3, "owner": 1, "score": 2, "ok": False, "at": "2026-12-06T10:00:00.123456Z",
        "when": None, "tags": None, "meta": {"k": "v"}, "extra": [1, {"x": None}], "items": [{"name": "n"}],
        "unknown": {"ignored": True}}


def test_values_go_decodes_pass() -> None:
    assert problems(GOOD, THING) == []
    assert problems(dict(GOOD, at="2026-12-06T10:00:00+08:00", count=3.0), THING) == []


@pytest.mark.parametrize(("field", "value", "expected"), [
    ("id", 5, "int 5 where Go has string"),
    ("count", "3", "str '3' where Go has int"),
    ("count", 1.5, "where Go has int"),
    ("count", True, "where Go has int"),
    ("owner", -1, "negative"),
    ("score", "0.5", "where Go has float64"),
    ("ok", 0, "where Go has bool"),
    ("at", 1765000000, "not an RFC 3339 time"),
    ("at", "2026-12-06 10:00:00", "not an RFC 3339 time"),
    ("at", "2026-13-06T10:00:00Z", "not a valid date"),
    ("at", None, "null where Go's time has no nil"),
    ("id", None, "null where Go's string has no nil"),
    ("tags", "a,b", "str where Go has []string"),
    ("tags", ["a", 1], "$.tags[1]: int 1 where Go has string"),
    ("meta", {"page": 3}, "$.meta.page: int 3 where Go has string"),
    ("items", [{"note": "x"}], "$.items[0].name: absent"),
])
def test_each_mismatch_is_reported_with_its_path(field: str, value: object, expected: str) -> None:
    found = problems(dict(GOOD, **{field: value}), THING)
    assert len(found) == 1, found
    assert expected in found[0], found


def test_absent_fields_unless_omitempty_or_known_not_served() -> None:
    body = {k: v for k, v in GOOD.items() if k != "count"}
    assert problems(body, THING) == ["$.count: absent, but WeKnora's Thing always has it"]
    assert problems(body, THING, not_served=frozenset({"Thing.count"})) == []
    assert problems(dict(GOOD, items=[{"name": "n"}]), THING) == []  # Item.note is omitempty
