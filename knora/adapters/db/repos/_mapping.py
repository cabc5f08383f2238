"""Row ⇄ record mapping shared by the repositories.

Columns and record fields share names, except ``metadata`` which SQLAlchemy reserves (``metadata_`` on rows).
Timestamps read back from SQLite are naive; they are stored in UTC, so the zone is put back on here.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from functools import cache
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel
from sqlalchemy import ColumnElement, DateTime, inspect
from sqlalchemy.ext.asyncio import AsyncSession

from knora.adapters.db.tables import Base
from knora.adapters.db.textfold import fold, folded

M = TypeVar("M", bound=BaseModel)
R = TypeVar("R", bound=Base)


def aware(value: Any) -> Any:
    """A timestamp read back naive (SQLite) is UTC: the zone is put back."""
    if isinstance(value, datetime) and value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value


def _field_name(key: str) -> str:
    return "metadata" if key == "metadata_" else key


@cache
def _columns(row_cls: type[Base]) -> tuple[tuple[str, str, bool], ...]:
    """(row attribute, record field, is a timestamp) per column of ``row_cls``; computed once per class."""
    out = []
    for attr in inspect(row_cls).column_attrs:
        is_time = any(isinstance(getattr(c, "type", None), DateTime) for c in attr.columns)
        out.append((attr.key, _field_name(attr.key), is_time))
    return tuple(out)


@cache
def _row_fields(model: type[BaseModel], row_cls: type[Base]) -> tuple[tuple[str, str], ...]:
    """(row attribute, record field) pairs the two share; computed once per pair of classes."""
    return tuple((key, name) for key, name, _ in _columns(row_cls) if name in model.model_fields)


@cache
def _time_positions(model: type[BaseModel], row_cls: type[Base]) -> frozenset[int]:
    """Positions in ``_row_fields`` of the timestamp columns: the only values ``aware`` can change."""
    times = {key for key, _, is_time in _columns(row_cls) if is_time}
    return frozenset(i for i, (key, _) in enumerate(_row_fields(model, row_cls)) if key in times)


def row_to(model: type[M], row: Base) -> M:
    data: dict[str, Any] = {name: aware(getattr(row, key)) for key, name in _row_fields(model, type(row))}
    return model.model_validate(data)


def select_columns(model: type[BaseModel], row_cls: type[Base]) -> list[Any]:
    """The row-class attributes ``row_to`` would read, for a column-only ``select`` (no ORM objects built)."""
    return [getattr(row_cls, key) for key, _ in _row_fields(model, row_cls)]


def values_to(model: type[M], row_cls: type[Base], values: Sequence[Any]) -> M:
    """``row_to`` for a result tuple of ``select(*select_columns(model, row_cls))``."""
    names = _row_fields(model, row_cls)
    times = _time_positions(model, row_cls)
    data = {name: v for (_, name), v in zip(names, values, strict=True)}
    for i in times:
        name = names[i][1]
        data[name] = aware(data[name])
    return model.model_validate(data)


def to_row(row_cls: type[R], record: BaseModel, **overrides: Any) -> R:
    return row_cls(**row_values(row_cls, record, **overrides))


def row_values(row_cls: type[Base], record: BaseModel, **overrides: Any) -> dict[str, Any]:
    dumped = record.model_dump(mode="python")
    values: dict[str, Any] = {}
    for key, name, _ in _columns(row_cls):
        if name in dumped:
            value = dumped[name]
            if type(value) is dict:  # a nested record dumps to a dict: it is stored in its JSON form
                nested = getattr(record, name, None)
                if isinstance(nested, BaseModel):
                    value = nested.model_dump(mode="json")
            values[key] = value
    values.update(overrides)
    return values


def apply(row: Base, record: BaseModel, *, skip: frozenset[str] = frozenset({"id", "created_at"})) -> None:
    for key, value in row_values(type(row), record).items():
        if key not in skip:
            setattr(row, key, value)


def clamp_page(page: int, page_size: int, *, max_size: int = 1000) -> tuple[int, int]:
    return max(page, 1), min(max(page_size, 1), max_size)


def contains_ci(column: Any, keyword: str) -> ColumnElement[bool]:
    """``column`` contains ``keyword`` as literal text, case-insensitively.

    A user's search text is not a LIKE pattern: ``%`` and ``_`` would otherwise match anything (``_`` found
    every document, ``100%`` matched ``1000``). They and the escape character itself are escaped and the
    ``ESCAPE`` clause is explicit, which SQLite and PostgreSQL both need for the backslash to mean it.
    Both sides are Unicode-normalised and lower-cased alike (``knora.adapters.db.textfold``).
    """
    escaped = fold(keyword).replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    like: ColumnElement[bool] = folded(column).like(f"%{escaped}%", escape="\\")
    return like


class SessionFactory(Protocol):
    """What repositories need: ``()`` for a read session, ``begin()`` for a write transaction."""

    def __call__(self) -> AsyncSession: ...

    def begin(self) -> Any: ...


class GatedSessions:
    """A session factory whose write transactions (``begin()``) queue on one asyncio lock.

    SQLite allows one writer at a time; several connections of one process that try at once do not queue, they
    sleep in SQLite's busy handler and retry, which costs tens of milliseconds per collision. Queuing the
    writes of this process in asyncio instead keeps each one short. On PostgreSQL there is no gate
    (``lock=None``).
    """

    def __init__(self, sessions: Any, lock: Any = None) -> None:
        self._sessions = sessions
        self._lock = lock

    def __call__(self) -> Any:
        return self._sessions()

    def begin(self) -> Any:
        return _GatedBegin(self._sessions, self._lock)


class _GatedBegin:
    def __init__(self, sessions: Any, lock: Any) -> None:
        self._sessions = sessions
        self._lock = lock
        self._cm: Any = None

    async def __aenter__(self) -> Any:
        if self._lock is not None:
            await self._lock.acquire()
        try:
            self._cm = self._sessions.begin()
            return await self._cm.__aenter__()
        except BaseException:
            if self._lock is not None:
                self._lock.release()
            raise

    async def __aexit__(self, *exc: object) -> Any:
        try:
            return await self._cm.__aexit__(*exc)
        finally:
            if self._lock is not None:
                self._lock.release()
