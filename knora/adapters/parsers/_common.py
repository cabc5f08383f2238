"""Helpers every parser shares: text decoding, line-ending normalisation, zip-bomb checks, markdown tables.

They live in one place so that all formats agree on what "the text of a document" is: LF line endings, no NUL
characters, and tables rendered the same way whichever format they came from.
"""

from __future__ import annotations

import html
import io
import re
import zipfile
from pathlib import PurePath

from knora.domain.document import PageKind, PageSpan
from knora.domain.files import file_type
from knora.ports.parser import ParsedImage, ParseError

DEFAULT_MAX_EXPANDED_BYTES = 512 * 1024 * 1024
# A real office document compresses 3-20x; XML-heavy spreadsheets reach ~100x. Beyond this the file is a bomb.
MAX_COMPRESSION_RATIO = 250
MAX_ZIP_ENTRIES = 20_000
_RATIO_FLOOR_BYTES = 16 * 1024 * 1024  # small archives may have any ratio: they cannot hurt

# Order matters: strict decoders first, latin-1 last because it accepts every byte string.
_ENCODINGS = ("utf-8", "gb18030", "latin-1")


def decode_text(data: bytes) -> str:
    """Decode bytes of unknown charset: BOMs first, then utf-8, gb18030 (Chinese), latin-1 as the
    catch-all."""
    if data.startswith(b"\xef\xbb\xbf"):
        return data[3:].decode("utf-8", errors="replace")
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16", errors="replace")
    for encoding in _ENCODINGS:
        try:
            return data.decode(encoding)
        except UnicodeDecodeError:
            continue
    return data.decode("latin-1")  # pragma: no cover - latin-1 never fails


_NL = re.compile(r"\r\n?")


def normalise_text(text: str) -> str:
    """CRLF/CR → LF (spec §9.3: before chunking), drop NULs, strip trailing spaces at line ends and the
    ends."""
    text = _NL.sub("\n", text).replace("\x00", "")
    text = re.sub(r"[ \t]+\n", "\n", text)
    return text.strip()


def file_stem(file_name: str) -> str:
    """The fallback title: the file name without directories and extension."""
    name = PurePath(file_name.replace("\\", "/")).name
    stem = PurePath(name).stem
    return stem or name


# inline HTML a title may carry literally (``<title><strong>socat</strong></title>`` is text to HTML);
# named tags only, so that "Vector<T>" or "a <b> c" read as written stay as they are
_TITLE_TAG = re.compile(r"</?(?:a|abbr|b|big|br|cite|code|del|dfn|em|font|i|ins|kbd|mark|q|s|samp|small|span|"
                        r"strike|strong|sub|sup|tt|u|var|wbr|h[1-6]|p|div)(?:\s[^<>]*)?/?>", re.IGNORECASE)
MAX_TITLE_CHARS = 300


def plain_title(title: str) -> str:
    """A document title as people read it: inline HTML tags and entities resolved, one line, bounded."""
    text = _TITLE_TAG.sub("", normalise_text(title))
    if "&" in text:
        text = html.unescape(text)
    text = re.sub(r"\s+", " ", text).strip()
    return text if len(text) <= MAX_TITLE_CHARS else text[:MAX_TITLE_CHARS - 1].rstrip() + "…"


def extension_of(file_name: str) -> str:
    """The registry key for ``file_name``: its extension, or the type of an extension-less Dockerfile …"""
    return file_type(file_name)


def check_zip_safety(data: bytes, max_expanded_bytes: int, kind: str) -> None:
    """Refuse archives that would expand enormously, judged from the central directory before anything is
    read."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            infos = archive.infolist()
    except (zipfile.BadZipFile, ValueError, OSError, NotImplementedError) as exc:
        raise ParseError(f"not a valid .{kind} file (it is not a readable zip archive): {exc}") from exc
    if len(infos) > MAX_ZIP_ENTRIES:
        raise ParseError(f"refusing .{kind}: the archive holds {len(infos)} entries "
                         f"(limit {MAX_ZIP_ENTRIES})")
    expanded = sum(max(info.file_size, 0) for info in infos)
    if expanded > max_expanded_bytes:
        raise ParseError(
            f"refusing .{kind}: it would expand to {expanded} bytes, above the limit of {max_expanded_bytes}"
        )
    if expanded > _RATIO_FLOOR_BYTES and expanded > MAX_COMPRESSION_RATIO * max(len(data), 1):
        raise ParseError(
            f"refusing .{kind}: compression ratio {expanded // max(len(data), 1)}x looks like a zip bomb"
        )


def _cell(value: object) -> str:
    text = "" if value is None else str(value)
    return text.replace("\r", " ").replace("\n", " ").replace("|", "\\|").strip()


def trim_rows(rows: list[list[str]]) -> list[list[str]]:
    """Drop empty trailing cells and empty rows; pad to a rectangle so a markdown table is well formed."""
    cleaned: list[list[str]] = []
    for row in rows:
        cells = list(row)
        while cells and not cells[-1].strip():
            cells.pop()
        if cells:
            cleaned.append(cells)
    width = max((len(r) for r in cleaned), default=0)
    return [r + [""] * (width - len(r)) for r in cleaned]


def markdown_table(rows: list[list[str]]) -> str:
    """First row is the header; GitHub-style pipe table (the chunker keeps header+separator together)."""
    rows = trim_rows(rows)
    if not rows:
        return ""
    header, body = rows[0], rows[1:]
    lines = ["| " + " | ".join(_cell(c) for c in header) + " |",
             "|" + "|".join(" --- " for _ in header) + "|"]
    lines.extend("| " + " | ".join(_cell(c) for c in row) + " |" for row in body)
    return "\n".join(lines)


class TextBuilder:
    """Assembles a document's text from parts (pages, slides, sections) and records where each part and each
    image lands, so the result's offsets stay true: every part is normalised before it is placed, parts are
    joined by one blank line, and ``parse_bytes``' final normalisation then changes nothing."""

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._length = 0
        self.pages: list[PageSpan] = []
        self.images: list[ParsedImage] = []

    def _place(self, text: str) -> tuple[int, int]:
        if self._parts:
            self._parts.append("\n\n")
            self._length += 2
        start = self._length
        self._parts.append(text)
        self._length += len(text)
        return start, self._length

    def add(self, text: str, *, page: int | None = None, kind: PageKind = "page", label: str = "") -> None:
        """Appends ``text`` (normalised; nothing when it is blank); with ``page``, as that page's span (a
        page added in several parts gets one span that grows)."""
        cleaned = normalise_text(text)
        if not cleaned:
            return
        start, end = self._place(cleaned)
        if page is None:
            return
        last = self.pages[-1] if self.pages else None
        if last is not None and last.number == page and last.kind == kind and last.label == label:
            last.end = end
        else:
            self.pages.append(PageSpan(number=page, start=start, end=end, kind=kind, label=label))

    def add_image(self, image: ParsedImage, *, page: int | None = None, kind: PageKind = "page",
                  label: str = "") -> None:
        """Places ``image`` here: its OCR text (if any) becomes part of the text at this point, on
        ``page`` (give the page's ``label`` too, so the OCR text joins that page's span)."""
        offset = self._length
        if normalise_text(image.ocr_text):
            offset += 2 if self._parts else 0  # the OCR text starts after the blank line add() puts first
            self.add(image.ocr_text, page=page, kind=kind, label=label)
        self.images.append(image.model_copy(update={"offset": offset, "page": page}))

    @property
    def text(self) -> str:
        return "".join(self._parts)
