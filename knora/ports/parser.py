from __future__ import annotations

from typing import Protocol, runtime_checkable

from pydantic import BaseModel, Field


class ParsedDocument(BaseModel):
    title: str = ""
    text: str  # normalised text (LF line endings); chunk offsets refer to it
    metadata: dict[str, str] = Field(default_factory=dict)
    tables: list[list[list[str]]] = Field(default_factory=list)  # csv/xlsx rows for data analysis


class ParseError(Exception):
    """A readable reason why a file could not be parsed; ends as parse_status=failed."""


@runtime_checkable
class Parser(Protocol):
    extensions: frozenset[str]  # lower-case, without the dot

    def parse(self, data: bytes, file_name: str) -> ParsedDocument:
        """Runs in a worker thread. Raises ParseError with a reason a user can act on."""
        ...
