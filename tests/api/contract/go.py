"""Go's ``encoding/json`` as WeKnora's clients decode Knora's answers: a small type language and a checker.

A WeKnora type is a ``Struct``: its JSON field names, each with the Go type of the field and whether the tag
says ``omitempty``. ``problems(value, kind)`` lists, with a JSON path each, what in ``value`` would not
decode into that Go type, or would decode into something WeKnora never sends:

- a string, number or boolean of the wrong JSON type (``encoding/json`` fails the whole response on it);
- an ``int`` that is fractional or a ``uint`` that is negative;
- a ``time.Time`` that is not RFC 3339 (``time.Time.UnmarshalJSON`` fails);
- ``null`` where the Go field is not a pointer, slice, map or interface (Go keeps the zero value, but WeKnora
  never sends it, so the web UI reads ``null`` where it expects a value);
- a struct field without ``omitempty`` that is absent (WeKnora always writes it; the web UI reads it), unless
  the caller lists it as knowingly not served.

Fields Knora returns beyond a WeKnora type are allowed: Go ignores unknown fields.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime

# What Go's time.Time.UnmarshalJSON accepts: RFC 3339 with an optional fraction and a zone.
RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$")

JSON = None | bool | int | float | str | list["JSON"] | dict[str, "JSON"]


class Kind:
    """A Go type as JSON sees it."""

    nullable = False

    def name(self) -> str:
        return type(self).__name__.lower()


@dataclass(frozen=True)
class Scalar(Kind):
    go: str  # string | int | uint | float64 | bool | time

    def name(self) -> str:
        return self.go


STR = Scalar("string")
INT = Scalar("int")
UINT = Scalar("uint")
FLOAT = Scalar("float64")
BOOL = Scalar("bool")
TIME = Scalar("time")


@dataclass(frozen=True)
class Raw(Kind):
    """``json.RawMessage``, ``interface{}``, ``gorm.DeletedAt``: any JSON value, null included."""

    nullable = True

    def name(self) -> str:
        return "any"


ANY = Raw()


@dataclass(frozen=True)
class Ptr(Kind):
    inner: Kind
    nullable = True

    def name(self) -> str:
        return "*" + self.inner.name()


@dataclass(frozen=True)
class Slice(Kind):
    inner: Kind
    nullable = True

    def name(self) -> str:
        return "[]" + self.inner.name()


@dataclass(frozen=True)
class Map(Kind):
    inner: Kind
    nullable = True

    def name(self) -> str:
        return "map[string]" + self.inner.name()


@dataclass(frozen=True)
class F:
    """One struct field: its Go type and whether the tag says ``omitempty``."""

    kind: Kind
    omitempty: bool = False


@dataclass(frozen=True)
class Struct(Kind):
    go: str
    fields: dict[str, F] = field(hash=False)

    def name(self) -> str:
        return self.go


def _scalar(value: JSON, kind: Scalar, path: str) -> list[str]:
    go = kind.go
    if go == "string":
        ok = isinstance(value, str)
    elif go in ("int", "uint"):
        ok = isinstance(value, int) and not isinstance(value, bool)
        if not ok and isinstance(value, float) and value.is_integer():
            ok = True  # 3.0 decodes into an int
        if ok and go == "uint" and isinstance(value, (int, float)) and value < 0:
            return [f"{path}: {value!r} is negative, Go's uint cannot hold it"]
    elif go == "float64":
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    elif go == "bool":
        ok = isinstance(value, bool)
    else:  # time
        if not isinstance(value, str) or not RFC3339.match(value):
            return [f"{path}: {value!r} is not an RFC 3339 time (Go's time.Time)"]
        try:
            datetime.fromisoformat(value)
        except ValueError:
            return [f"{path}: {value!r} is not a valid date"]
        return []
    return [] if ok else [f"{path}: {type(value).__name__} {value!r:.60} where Go has {go}"]


def problems(value: JSON, kind: Kind, path: str = "$",
             not_served: frozenset[str] = frozenset()) -> list[str]:
    """What would fail to decode (or decode into something WeKnora never sends); see the module docstring.

    ``not_served``: ``"Struct.field"`` names that Knora knowingly leaves out (absent is then fine; a wrong
    type still is not)."""
    if value is None:
        return [] if kind.nullable else [f"{path}: null where Go's {kind.name()} has no nil"]
    if isinstance(kind, Scalar):
        return _scalar(value, kind, path)
    if isinstance(kind, Raw):
        return []
    if isinstance(kind, Ptr):
        return problems(value, kind.inner, path, not_served)
    if isinstance(kind, Slice):
        if not isinstance(value, list):
            return [f"{path}: {type(value).__name__} where Go has {kind.name()}"]
        out: list[str] = []
        for i, item in enumerate(value):
            out += problems(item, kind.inner, f"{path}[{i}]", not_served)
        return out
    if isinstance(kind, Map):
        if not isinstance(value, dict):
            return [f"{path}: {type(value).__name__} where Go has {kind.name()}"]
        out = []
        for key, item in value.items():
            out += problems(item, kind.inner, f"{path}.{key}", not_served)
        return out
    assert isinstance(kind, Struct), kind
    if not isinstance(value, dict):
        return [f"{path}: {type(value).__name__} where Go has struct {kind.go}"]
    out = []
    for name, f in kind.fields.items():
        if name not in value:
            if not f.omitempty and f"{kind.go}.{name}" not in not_served:
                out.append(f"{path}.{name}: absent, but WeKnora's {kind.go} always has it")
            continue
        out += problems(value[name], f.kind, f"{path}.{name}", not_served)
    return out
