from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from pydantic import BaseModel, Field

from knora.domain.document import PageSpan
from knora.ports.ocr import OcrEngine


class ParsedImage(BaseModel):
    """An image found in a document (or the document itself, for an image file): the encoded bytes, where
    it sits in the text (``offset``, a position in ``ParsedDocument.text``), and what OCR read in it."""

    data: bytes
    mime: str = "image/png"
    offset: int = 0
    page: int | None = None
    width: int = 0
    height: int = 0
    name: str = ""
    ocr_text: str = ""


class ParsedDocument(BaseModel):
    title: str = ""
    text: str  # normalised text (LF line endings); chunk offsets refer to it
    metadata: dict[str, str] = Field(default_factory=dict)
    tables: list[list[list[str]]] = Field(default_factory=list)  # csv/xlsx rows for data analysis
    pages: list[PageSpan] = Field(default_factory=list)  # sorted, disjoint spans of ``text``
    images: list[ParsedImage] = Field(default_factory=list)
    skipped: list[str] = Field(default_factory=list)  # what a partial parse left out, each with its reason


class ParseError(Exception):
    """A readable reason why a file could not be parsed; ends as parse_status=failed."""


class ParseOptions(BaseModel):
    """Per-upload choices (WeKnora's ``process_config``), sent to the parser worker with the document."""

    ocr: bool = True  # recognise text in images and in PDF pages without a usable text layer
    ocr_engine: str = "rapidocr"
    extract_images: bool = True  # keep the document's images (for captions and the chunk viewer)
    time_budget_seconds: float = 0.0  # the parser's own deadline for optional work (OCR); 0 = none


@dataclass(frozen=True)
class ParseContext:
    """What a parser gets besides the bytes: the archive budget, the upload's options and, when OCR is on, a
    loader for the OCR engine (called on first use; the engine is cached per process)."""

    max_expanded_bytes: int
    options: ParseOptions = field(default_factory=ParseOptions)
    ocr_loader: Callable[[], OcrEngine] | None = None

    def ocr(self) -> OcrEngine | None:
        """The OCR engine, or None when the upload turned OCR off or none is configured."""
        if not self.options.ocr or self.ocr_loader is None:
            return None
        return self.ocr_loader()


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
    memory_mb: int = 1536  # address space of the parsing process (settings.parse_memory_limit_mb)
    timeout_seconds: float = 300.0  # one document, from the moment the worker has it
    nice: int = 0  # how much lower the parsing processes run than the server (settings.background_nice)


@runtime_checkable
class DocumentParsers(Protocol):
    """How ingestion parses an original: picked by file extension, run under ``ParseLimits``. A file that
    exceeds a limit, crashes its parser or cannot be read ends in ParseError with a reason a user can act on;
    cancelling ``parse`` stops the work (a worker process is killed)."""

    @property
    def extensions(self) -> frozenset[str]: ...

    async def parse(self, data: bytes, file_name: str,
                    options: ParseOptions | None = None) -> ParsedDocument: ...

    async def aclose(self) -> None:
        """Stops the workers; a parse still running ends in ParseError."""
        ...
