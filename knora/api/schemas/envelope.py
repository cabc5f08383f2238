"""WeKnora's response envelope (api §1.3, §1.4) as models, generic over the ``data`` they carry."""

from __future__ import annotations

from typing import Generic, TypeVar

from pydantic import BaseModel

T = TypeVar("T")


class Envelope(BaseModel, Generic[T]):
    """``{"success": true, "data": …}``; some answers add a ``message``."""

    success: bool = True
    data: T
    message: str | None = None


class PageEnvelope(BaseModel, Generic[T]):
    """A flat page: the items in ``data``, the counts beside it."""

    success: bool = True
    data: list[T]
    total: int
    page: int
    page_size: int


class NestedPage(BaseModel, Generic[T]):
    """The nested page shape (tags, FAQ entries): counts and items inside ``data``."""

    total: int
    page: int
    page_size: int
    data: list[T]


class Done(BaseModel):
    """An answer with no data, only a message (deletes)."""

    success: bool = True
    message: str
