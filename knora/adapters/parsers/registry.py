"""Parser registry: file extension → parser, plus ``parse_bytes`` — the one entry point ingestion calls.

``parse_bytes`` owns the checks every format needs (empty input, unsupported type, line endings) so that no
parser can forget them, and turns any unexpected parser crash into a ``ParseError``: a bad file must end as
``parse_status=failed`` with a reason, never as a dead worker.
"""

from __future__ import annotations

from collections.abc import Callable

from knora.adapters.parsers._common import (
    DEFAULT_MAX_EXPANDED_BYTES,
    extension_of,
    normalise_text,
    plain_title,
)
from knora.adapters.parsers.adoc import AsciiDocParser
from knora.adapters.parsers.code import CodeParser
from knora.adapters.parsers.csv import CsvParser
from knora.adapters.parsers.doc import DocParser
from knora.adapters.parsers.docx import DocxParser
from knora.adapters.parsers.eml import EmlParser
from knora.adapters.parsers.epub import EpubParser
from knora.adapters.parsers.html import HtmlParser
from knora.adapters.parsers.image import ImageParser
from knora.adapters.parsers.json import JsonParser
from knora.adapters.parsers.md import MarkdownParser
from knora.adapters.parsers.msg import MsgParser
from knora.adapters.parsers.odf import OdfParser
from knora.adapters.parsers.pdf import PdfParser
from knora.adapters.parsers.ppt import LegacyPowerPointParser
from knora.adapters.parsers.pptx import PptxParser
from knora.adapters.parsers.rst import RstParser
from knora.adapters.parsers.rtf import RtfParser
from knora.adapters.parsers.txt import TextParser
from knora.adapters.parsers.xls import XlsParser
from knora.adapters.parsers.xlsx import XlsxParser
from knora.domain.registry import Registry
from knora.ports.parser import ParseContext, ParsedDocument, ParseError, ParseOptions, Parser

ParserFactory = Callable[[ParseContext], Parser]

# extension (lower case, no dot) → factory; the factory gets the parse context (archive budget, the upload's
# options, the OCR engine)
PARSERS: Registry[ParserFactory] = Registry("file type")


def register(factory: ParserFactory, extensions: frozenset[str]) -> None:
    """Add (or replace) the parser for ``extensions``; the factory gets the ``ParseContext``."""
    for ext in extensions:
        PARSERS.register(ext.lower().lstrip("."), factory)


register(lambda _ctx: TextParser(), TextParser.extensions)
register(lambda ctx: MarkdownParser(ctx), MarkdownParser.extensions)
register(lambda ctx: HtmlParser(ctx), HtmlParser.extensions)
register(PdfParser, PdfParser.extensions)
register(lambda ctx: DocxParser(ctx.max_expanded_bytes), DocxParser.extensions)
register(lambda _ctx: CsvParser(), CsvParser.extensions)
register(lambda ctx: XlsxParser(ctx.max_expanded_bytes), XlsxParser.extensions)
register(lambda _ctx: JsonParser(), JsonParser.extensions)
# e-mail parses its attachments with the registry, under the same context (``parse_with``)
register(lambda ctx: EmlParser(ctx, parse_with, supported_extensions()), EmlParser.extensions)
register(lambda ctx: MsgParser(ctx, parse_with, supported_extensions()), MsgParser.extensions)
# e-books, RTF, legacy Excel and Word, code (issue 15, branch office)
register(EpubParser, EpubParser.extensions)
register(lambda _ctx: RtfParser(), RtfParser.extensions)
register(lambda ctx: XlsParser(lambda: XlsxParser(ctx.max_expanded_bytes), HtmlParser), XlsParser.extensions)
register(lambda ctx: DocParser(RtfParser, HtmlParser, lambda: DocxParser(ctx.max_expanded_bytes)),
         DocParser.extensions)
register(lambda _ctx: CodeParser(), CodeParser.extensions)
register(lambda ctx: PptxParser(ctx.max_expanded_bytes, ctx), PptxParser.extensions)
register(lambda _ctx: LegacyPowerPointParser(), LegacyPowerPointParser.extensions)
register(lambda ctx: OdfParser(ctx.max_expanded_bytes, ctx), OdfParser.extensions)
register(ImageParser, ImageParser.extensions)
# structured text (issue 18): headings and blocks kept as Markdown for the chunker
register(lambda _ctx: RstParser(), RstParser.extensions)
register(lambda _ctx: AsciiDocParser(), AsciiDocParser.extensions)


def context(max_expanded_bytes: int = DEFAULT_MAX_EXPANDED_BYTES,
            options: ParseOptions | None = None) -> ParseContext:
    """The context a parser is built with; OCR loads lazily from ``options.ocr_engine``."""
    from knora.adapters.ocr.registry import load_engine

    opts = options or ParseOptions()
    return ParseContext(max_expanded_bytes=max_expanded_bytes, options=opts,
                        ocr_loader=lambda: load_engine(opts.ocr_engine))


def supported_extensions() -> frozenset[str]:
    return frozenset(PARSERS.names())


def get_parser(ext: str, *, max_expanded_bytes: int = DEFAULT_MAX_EXPANDED_BYTES,
               options: ParseOptions | None = None) -> Parser:
    """``ext`` with or without the dot, any case. Unknown → ParseError naming what is supported."""
    key = ext.lower().lstrip(".")
    if key not in PARSERS:
        shown = f".{key}" if key else "(no extension)"
        supported = ", ".join(f".{e}" for e in PARSERS.names())
        raise ParseError(f"unsupported file type {shown}; supported: {supported}")
    return PARSERS.get(key)(context(max_expanded_bytes, options))


def parse_bytes(data: bytes, file_name: str, *, max_expanded_bytes: int = DEFAULT_MAX_EXPANDED_BYTES,
                options: ParseOptions | None = None) -> ParsedDocument:
    """Pick the parser by extension and parse; the result's text is normalised (LF, no NUL, trimmed). A
    parser that reports pages or images must hand over normalised text (``TextBuilder`` does), since their
    offsets point into it."""
    return parse_with(context(max_expanded_bytes, options), data, file_name)


def parse_with(ctx: ParseContext, data: bytes, file_name: str) -> ParsedDocument:
    """``parse_bytes`` with a context already built: how a container (an e-mail) parses what it holds under
    its own context."""
    key = extension_of(file_name)
    if key not in PARSERS:
        get_parser(key)  # raises the "unsupported file type" ParseError
    parser = PARSERS.get(key)(ctx)
    if not data or not data.strip():
        raise ParseError("the file is empty")
    try:
        doc = parser.parse(data, file_name)
    except ParseError:
        raise
    except MemoryError as exc:
        raise ParseError("the file is too large to parse in memory") from exc
    except Exception as exc:  # any parser bug or library crash becomes a reason, not a dead worker
        raise ParseError(f"could not parse {file_name!r}: {type(exc).__name__}: {exc}") from exc
    text = normalise_text(doc.text)
    if not text and not doc.images:  # an image-only document may still be captioned (ingestion decides)
        raise ParseError("no text could be extracted from the file")
    if (doc.pages or doc.images) and text != doc.text:
        raise ParseError(f"could not parse {file_name!r}: the parser's page offsets do not match its text "
                         "(a bug: please report it)")
    return doc.model_copy(update={"text": text, "title": plain_title(doc.title)})


class ParserRegistry:
    """Object form of this module for the running services (``Services.parsers``): carries the settings' size
    limit."""

    def __init__(self, max_expanded_bytes: int = DEFAULT_MAX_EXPANDED_BYTES) -> None:
        self.max_expanded_bytes = max_expanded_bytes

    @property
    def extensions(self) -> frozenset[str]:
        return supported_extensions()

    def get(self, ext: str) -> Parser:
        return get_parser(ext, max_expanded_bytes=self.max_expanded_bytes)

    def parse(self, data: bytes, file_name: str, options: ParseOptions | None = None) -> ParsedDocument:
        return parse_bytes(data, file_name, max_expanded_bytes=self.max_expanded_bytes, options=options)
