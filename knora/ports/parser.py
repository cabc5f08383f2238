from __future__ import annotations

from dataclasses import dataclass
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


@dataclass(frozen=True)
class ParseLimits:
    """What one document's parse may cost. 0 means no bound (only the in-thread runner ignores the memory and
    time bounds: a thread can be neither capped nor stopped)."""

    max_expanded_bytes: int  # bytes a zip container (DOCX, XLSX) may expand to, counted as they are read
    memory_mb: int = 1024  # address space of the parsing process
    timeout_seconds: float = 300.0  # one document, from the moment the worker has it


@runtime_checkable
class DocumentParsers(Protocol):
    """How ingestion parses an original: picked by file extension, run under ``ParseLimits``. A file that
    exceeds a limit, crashes its parser or cannot be read ends in ParseError with a reason a user can act on;
    cancelling ``parse`` stops the work (a worker process is killed)."""

    @property
    def extensions(self) -> frozenset[str]: ...

    async def parse(self, data: bytes, file_name: str) -> ParsedDocument: ...

    async def aclose(self) -> None:
        """Stops the workers; a parse still running ends in ParseError."""
        ...
