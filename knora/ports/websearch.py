from __future__ import annotations

from typing import Protocol, runtime_checkable

from pydantic import BaseModel


class WebResult(BaseModel):
    title: str
    url: str
    snippet: str = ""
    content: str = ""
    source: str = ""
    published_at: str | None = None


@runtime_checkable
class WebSearch(Protocol):
    @property
    def name(self) -> str: ...

    async def search(self, query: str, max_results: int = 5) -> list[WebResult]: ...
