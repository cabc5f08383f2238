"""Row ⇄ record mapping shared by the repositories.

Columns and record fields share names, except ``metadata`` which SQLAlchemy reserves (``metadata_`` on rows).
Timestamps read back from SQLite are naive; they are stored in UTC, so the zone is put back on here.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, TypeVar

from pydantic import BaseModel
from sqlalchemy import inspect

from knora.adapters.db.tables import Base

M = TypeVar("M", bound=BaseModel)
R = TypeVar("R", bound=Base)


def _aware(value: Any) -> Any:
    if isinstance(value, datetime) and value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value


def row_to(model: type[M], row: Base) -> M:
    data: dict[str, Any] = {}
    for attr in inspect(type(row)).column_attrs:
        name = "metadata" if attr.key == "metadata_" else attr.key
        if name in model.model_fields:
            data[name] = _aware(getattr(row, attr.key))
    return model.model_validate(data)


def to_row(row_cls: type[R], record: BaseModel, **overrides: Any) -> R:
    return row_cls(**row_values(row_cls, record, **overrides))


def row_values(row_cls: type[Base], record: BaseModel, **overrides: Any) -> dict[str, Any]:
    dumped = record.model_dump(mode="python")
    values: dict[str, Any] = {}
    for attr in inspect(row_cls).column_attrs:
        name = "metadata" if attr.key == "metadata_" else attr.key
        if name in dumped:
            value = dumped[name]
            if isinstance(getattr(record, name, None), BaseModel):
                value = getattr(record, name).model_dump(mode="json")
            values[attr.key] = value
    values.update(overrides)
    return values


def apply(row: Base, record: BaseModel, *, skip: frozenset[str] = frozenset({"id", "created_at"})) -> None:
    for key, value in row_values(type(row), record).items():
        if key not in skip:
            setattr(row, key, value)


def clamp_page(page: int, page_size: int, *, max_size: int = 1000) -> tuple[int, int]:
    return max(page, 1), min(max(page_size, 1), max_size)
