"""OpenDocument text, spreadsheets and presentations (odt, ods, odp) read from ``content.xml`` with lxml.

Why not odfpy: it loads every part (styles, settings, meta) into its own DOM through SAX, and a spreadsheet's
``number-columns-repeated="16384"`` on the last empty cell of every row (which LibreOffice writes) is
something the parser must refuse to expand — easier to control reading the XML directly. The zip is
decompressed under a budget (``zipguard``) first, and the XML parser resolves no entities and loads no DTD.

- odt: headings as ``#`` (outline level), paragraphs, lists as ``-`` items, tables as Markdown tables,
  pictures as images (OCR'd).
- ods: every sheet a page span of kind "sheet" labelled with its name, its rows a Markdown table and, as for
  xlsx, in ``tables`` for data analysis.
- odp: every slide a page span of kind "slide": title, text boxes in reading order (footer, date and
  page-number boxes left out), tables, pictures, and the speaker notes as a "Notes:" paragraph.
- templates (ott, ots, otp) are read like the documents they make.
"""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Iterator

from lxml import etree

from knora.adapters.parsers._common import (
    DEFAULT_MAX_EXPANDED_BYTES,
    TextBuilder,
    extension_of,
    file_stem,
    markdown_table,
    trim_rows,
)
from knora.adapters.parsers._images import ImageCollector
from knora.adapters.parsers.zipguard import bounded_archive
from knora.domain.document import PageKind
from knora.ports.parser import ParseContext, ParsedDocument, ParseError, ParseOptions

_NS = {
    "office": "urn:oasis:names:tc:opendocument:xmlns:office:1.0",
    "text": "urn:oasis:names:tc:opendocument:xmlns:text:1.0",
    "table": "urn:oasis:names:tc:opendocument:xmlns:table:1.0",
    "draw": "urn:oasis:names:tc:opendocument:xmlns:drawing:1.0",
    "presentation": "urn:oasis:names:tc:opendocument:xmlns:presentation:1.0",
    "svg": "urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0",
    "xlink": "http://www.w3.org/1999/xlink",
    "dc": "http://purl.org/dc/elements/1.1/",
}
_MIMETYPES = {
    "application/vnd.oasis.opendocument.text": "odt",
    "application/vnd.oasis.opendocument.spreadsheet": "ods",
    "application/vnd.oasis.opendocument.presentation": "odp",
    "application/vnd.oasis.opendocument.text-template": "odt",
    "application/vnd.oasis.opendocument.spreadsheet-template": "ods",
    "application/vnd.oasis.opendocument.presentation-template": "odp",
}
_TEMPLATES = {"ott": "odt", "ots": "ods", "otp": "odp"}
MAX_ROWS_PER_SHEET = 1_000_000
MAX_COLUMNS = 1_024  # a sheet wider than this is cut, and says so
MAX_CELLS = 5_000_000  # per document
MAX_SLIDES = 2_000
_MAX_DEPTH = 64
_LENGTH = re.compile(r"^\s*(-?[0-9.]+)\s*(cm|mm|in|pt|pc|px)?\s*$")
_TO_CM = {"cm": 1.0, "mm": 0.1, "in": 2.54, "pt": 2.54 / 72, "pc": 2.54 / 6, "px": 2.54 / 96, None: 1.0}


def _q(name: str) -> str:
    prefix, local = name.split(":")
    return f"{{{_NS[prefix]}}}{local}"


_P, _H, _LIST, _ITEM, _HEADER = _q("text:p"), _q("text:h"), _q("text:list"), _q("text:list-item"), \
    _q("text:list-header")
_S, _TAB, _BR, _NOTE, _ANNOTATION = _q("text:s"), _q("text:tab"), _q("text:line-break"), _q("text:note"), \
    _q("office:annotation")
_TABLE, _ROW, _CELL, _COVERED = _q("table:table"), _q("table:table-row"), _q("table:table-cell"), \
    _q("table:covered-table-cell")
_FRAME, _IMAGE, _TEXTBOX = _q("draw:frame"), _q("draw:image"), _q("draw:text-box")
_NOTES = _q("presentation:notes")
_SKIP_INLINE = {_NOTE, _ANNOTATION, _q("text:bookmark-ref"), _q("draw:frame")}
_ATTRS = {name: _q(name) for name in ("table:number-rows-repeated", "table:number-columns-repeated",
                                     "text:outline-level")}
_VALUE_ATTRS = tuple(_q(f"office:{name}") for name in ("value", "date-value", "time-value", "boolean-value",
                                                     "string-value"))
_HREF = _q("xlink:href")
_CLASS = _q("presentation:class")
_CHROME = {"footer", "header", "date-time", "page-number"}
_VECTOR_FILES = (".svg", ".svm", ".wmf", ".emf")
_COLUMNS_REPEATED = _ATTRS["table:number-columns-repeated"]
_ROW_GROUPS = {_q("table:table-rows"), _q("table:table-row-group"), _q("table:table-header-rows")}


def _inline(el: etree._Element) -> str:
    """The text of a paragraph: spaces (``text:s``), tabs and line breaks as written; notes, comments and
    frames (pictures, text boxes) left out."""
    if not len(el):
        return el.text or ""
    parts = [el.text or ""]
    for child in el:
        tag = child.tag
        if tag == _S:
            parts.append(" " * min(int(child.get(_q("text:c"), "1") or 1), 100))
        elif tag == _TAB:
            parts.append("\t")
        elif tag == _BR:
            parts.append("\n")
        elif tag not in _SKIP_INLINE and isinstance(tag, str):
            parts.append(_inline(child))
        parts.append(child.tail or "")
    return "".join(parts)


def _repeat(el: etree._Element, attr: str, cap: int) -> int:
    try:
        return max(1, min(int(el.get(_ATTRS[attr], "1")), cap))
    except ValueError:
        return 1


def _cell_text(cell: etree._Element) -> str:
    """A cell's displayed text (its paragraphs, one a line), else its typed value."""
    if not len(cell):
        return _value(cell)
    parts = [_inline(p) for p in cell if p.tag == _P or p.tag == _H]
    text = (parts[0] if len(parts) == 1 else "\n".join(parts)).strip()
    return text or _value(cell)


def _value(cell: etree._Element) -> str:
    """A cell's typed value when it has no displayed text (some writers omit the ``text:p``)."""
    for attr in _VALUE_ATTRS:
        value = cell.get(attr)
        if value:
            return str(value).strip()
    return ""


def _length_cm(value: str | None) -> float:
    match = _LENGTH.match(value or "")
    if not match:
        return 0.0
    return float(match.group(1)) * _TO_CM.get(match.group(2), 1.0)


class _Sheet:
    """Rows of one ``table:table``; repeated empty cells and rows are counted, never expanded, unless
    something follows them."""

    def __init__(self, budget: list[int]) -> None:
        self.rows: list[list[str]] = []
        self.cut_columns = False
        self._budget = budget  # cells left for the whole document (a one-element list, shared)

    def read(self, table: etree._Element) -> list[list[str]]:
        pending_rows = 0
        for row in self._rows(table):
            cells = self._cells(row)
            repeat = _repeat(row, "table:number-rows-repeated", MAX_ROWS_PER_SHEET + 1)
            if not any(c.strip() for c in cells):
                pending_rows += repeat
                continue
            if pending_rows:
                self._append([], pending_rows)
                pending_rows = 0
            self._append(cells, repeat)
        return trim_rows(self.rows)

    def _append(self, cells: list[str], times: int) -> None:
        if len(self.rows) + times > MAX_ROWS_PER_SHEET:
            raise ParseError(f"a sheet has more than {MAX_ROWS_PER_SHEET} rows")
        self._budget[0] -= max(len(cells), 1) * times
        if self._budget[0] < 0:
            raise ParseError(f"the spreadsheet has more than {MAX_CELLS} cells")
        self.rows.extend(list(cells) for _ in range(times))

    def _rows(self, el: etree._Element, depth: int = 0) -> Iterator[etree._Element]:
        for child in el:
            if child.tag == _ROW:
                yield child
            elif child.tag in _ROW_GROUPS and depth < _MAX_DEPTH:
                yield from self._rows(child, depth + 1)

    def _cells(self, row: etree._Element) -> list[str]:
        cells: list[str] = []
        pending = 0
        for cell in row:
            if cell.tag not in (_CELL, _COVERED):
                continue
            text = _cell_text(cell)
            repeat = _repeat(cell, "table:number-columns-repeated", MAX_COLUMNS + 1) \
                if _COLUMNS_REPEATED in cell.attrib else 1
            if not text:
                pending += repeat
                continue
            if pending:
                cells.extend([""] * pending)
                pending = 0
            cells.extend([text] * repeat)
            if len(cells) > MAX_COLUMNS:
                self.cut_columns = True
                return cells[:MAX_COLUMNS]
        return cells


class _Walker:
    """Renders body elements (paragraphs, headings, lists, tables, frames) into a ``TextBuilder``."""

    def __init__(self, archive: zipfile.ZipFile, builder: TextBuilder, images: ImageCollector) -> None:
        self.archive = archive
        self.builder = builder
        self.images = images
        self.first_heading = ""
        self.page: int | None = None
        self.kind: PageKind = "page"
        self._cells = [MAX_CELLS]

    def add(self, text: str) -> None:
        self.builder.add(text, page=self.page, kind=self.kind)

    def blocks(self, el: etree._Element, depth: int = 0) -> None:
        for child in el:
            tag = child.tag
            if tag == _H:
                text = _inline(child).strip()
                level = min(max(_repeat(child, "text:outline-level", 6), 1), 6)
                if text:
                    self.first_heading = self.first_heading or text
                    self.add("#" * level + " " + text.replace("\n", " "))
                self.frames(child, depth)
                self.notes(child)
            elif tag == _P:
                self.add(_inline(child))
                self.frames(child, depth)
                self.notes(child)
            elif tag == _LIST:
                self.add("\n".join(self.list_items(child, 0, depth)))
            elif tag == _TABLE:
                rows = _Sheet(self._cells).read(child)
                self.add(markdown_table(rows))
            elif tag == _FRAME:
                self.frame(child, depth)
            elif isinstance(tag, str) and tag != _NOTES and depth < _MAX_DEPTH:
                self.blocks(child, depth + 1)  # sections, groups, text boxes, custom shapes …

    def notes(self, paragraph: etree._Element) -> None:
        """Footnotes and endnotes of a paragraph, after it: "[1] text" (their citation mark is left out of
        the paragraph's own text)."""
        for note in paragraph.iter(_NOTE):
            citation = note.find("text:note-citation", _NS)
            body = note.find("text:note-body", _NS)
            if body is None:
                continue
            text = " ".join(t for t in (_inline(p).strip() for p in body.iter(_P, _H)) if t)
            if text:
                mark = (citation.text or "").strip() if citation is not None else ""
                self.add(f"[{mark}] {text}" if mark else text)

    def list_items(self, el: etree._Element, level: int, depth: int) -> list[str]:
        lines: list[str] = []
        for item in el:
            if item.tag not in (_ITEM, _HEADER):
                continue
            for child in item:
                if child.tag in (_P, _H):
                    text = _inline(child).strip()
                    if text:
                        lines.append("  " * level + "- " + text.replace("\n", " "))
                elif child.tag == _LIST and depth < _MAX_DEPTH:
                    lines.extend(self.list_items(child, level + 1, depth + 1))
        return lines

    def frames(self, paragraph: etree._Element, depth: int) -> None:
        """Pictures and text boxes anchored inside a paragraph come after its text (frames inside those
        frames are reached through them)."""
        for frame in paragraph.iter(_FRAME):
            parent = frame.getparent()
            while parent is not None and parent is not paragraph and parent.tag != _FRAME:
                parent = parent.getparent()
            if parent is paragraph:
                self.frame(frame, depth)

    def frame(self, frame: etree._Element, depth: int) -> None:
        # A frame may hold one picture in several forms (LibreOffice: an SVG, then a PNG fallback): the
        # first one that can be kept is, bitmaps first.
        pictures = sorted((c for c in frame if c.tag == _IMAGE),
                          key=lambda c: (c.get(_HREF) or "").lower().endswith(_VECTOR_FILES))
        for picture in pictures:
            if self.picture(picture):
                break
        for child in frame:
            if child.tag == _TEXTBOX and depth < _MAX_DEPTH:
                self.blocks(child, depth + 1)
            elif child.tag == _TABLE:
                self.add(markdown_table(_Sheet(self._cells).read(child)))

    def picture(self, image_el: etree._Element) -> bool:
        """Places the embedded picture; False when it is linked, missing or left out."""
        href = (image_el.get(_HREF) or "").lstrip("./")
        if not href or "://" in href:
            return False  # linked, not embedded: never fetched
        try:
            data = self.archive.read(href)
        except KeyError:
            self.images.skip("left out: the picture the document names is missing from the file")
            return False
        image = self.images.image(data, href.rsplit("/", 1)[-1])
        if image is None:
            return False
        self.images.place(self.builder, image, page=self.page, kind=self.kind)
        return True


def _xml(archive: zipfile.ZipFile, name: str) -> etree._Element | None:
    try:
        raw = archive.read(name)
    except KeyError:
        return None
    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False,
                             remove_comments=True, remove_pis=True)
    return etree.fromstring(raw, parser)


class OdfParser:
    extensions: frozenset[str] = frozenset({"odt", "ods", "odp", *_TEMPLATES})

    def __init__(self, max_expanded_bytes: int = DEFAULT_MAX_EXPANDED_BYTES, ctx: ParseContext | None = None,
                 *, max_slides: int = MAX_SLIDES) -> None:
        self.max_expanded_bytes = max_expanded_bytes
        self.ctx = ctx or ParseContext(max_expanded_bytes=max_expanded_bytes, options=ParseOptions(ocr=False))
        self.max_slides = max_slides

    def parse(self, data: bytes, file_name: str) -> ParsedDocument:
        ext = extension_of(file_name)
        kind = _TEMPLATES.get(ext, ext) if ext in self.extensions else "odt"
        data = bounded_archive(data, self.max_expanded_bytes, kind)
        try:
            with zipfile.ZipFile(io.BytesIO(data)) as archive:
                mimetype = archive.read("mimetype").decode("ascii", "replace").strip() \
                    if "mimetype" in archive.namelist() else ""
                kind = _MIMETYPES.get(mimetype, kind)
                manifest = archive.read("META-INF/manifest.xml") \
                    if "META-INF/manifest.xml" in archive.namelist() else b""
                if b"encryption-data" in manifest:
                    raise ParseError(f"the .{kind} file is password-protected; remove the password and "
                                     "upload again")
                content = _xml(archive, "content.xml")
                if content is None:
                    raise ParseError(f"the .{kind} file has no content.xml: it is not an OpenDocument file")
                meta = _xml(archive, "meta.xml")
                title = ""
                if meta is not None:
                    found = meta.find(".//dc:title", _NS)
                    title = (found.text or "").strip() if found is not None else ""
                builder = TextBuilder()
                images = ImageCollector(self.ctx)
                walker = _Walker(archive, builder, images)
                doc = self._body(kind, content, walker, file_name)
        except ParseError:
            raise
        except Exception as exc:  # lxml syntax errors, bad zip entries, odd attribute values
            raise ParseError(f"the .{kind} file is damaged or not an OpenDocument file: "
                             f"{type(exc).__name__}: {exc}") from exc
        return doc.model_copy(update={
            "title": title or doc.title or file_stem(file_name), "text": builder.text,
            "pages": builder.pages, "images": builder.images, "skipped": doc.skipped + images.skipped})

    def _body(self, kind: str, content: etree._Element, walker: _Walker, file_name: str) -> ParsedDocument:
        body = content.find("office:body", _NS)
        if body is None:
            raise ParseError(f"the .{kind} file has no document body")
        if kind == "ods":
            return self._sheets(body, walker)
        if kind == "odp":
            return self._slides(body, walker)
        root = body.find("office:text", _NS)
        walker.blocks(root if root is not None else body)
        return ParsedDocument(title=walker.first_heading, text="", metadata={"format": "odt"})

    def _sheets(self, body: etree._Element, walker: _Walker) -> ParsedDocument:
        tables: list[list[list[str]]] = []
        names: list[str] = []
        skipped: list[str] = []
        cells = [MAX_CELLS]
        spreadsheet = body.find("office:spreadsheet", _NS)
        sheets = spreadsheet.findall("table:table", _NS) if spreadsheet is not None else []
        for number, table in enumerate(sheets, start=1):
            name = table.get(_q("table:name")) or f"Sheet{number}"
            sheet = _Sheet(cells)
            rows = sheet.read(table)
            if sheet.cut_columns:
                skipped.append(f"sheet {name!r}: columns after {MAX_COLUMNS} left out")
            if not rows:
                continue
            names.append(name)
            tables.append(rows)
            walker.builder.add(f"## {name}\n\n{markdown_table(rows)}", page=number, kind="sheet", label=name)
        if not tables:
            raise ParseError("the spreadsheet has no non-empty sheets")
        return ParsedDocument(text="", tables=tables, skipped=skipped,
                              metadata={"format": "ods", "sheets": ", ".join(names)})

    def _slides(self, body: etree._Element, walker: _Walker) -> ParsedDocument:
        presentation = body.find("office:presentation", _NS)
        pages = presentation.findall("draw:page", _NS) if presentation is not None else []
        skipped: list[str] = []
        first_title = ""
        walker.kind = "slide"
        for number, page in enumerate(pages, start=1):
            if number > self.max_slides:
                skipped.append(f"slides {number}–{len(pages)} left out: more than {self.max_slides} slides")
                break
            walker.page = number
            shapes = sorted((c for c in page if isinstance(c.tag, str) and c.tag != _NOTES),
                            key=lambda c: (_length_cm(c.get(_q("svg:y"))), _length_cm(c.get(_q("svg:x")))))
            for shape in shapes:
                if shape.get(_CLASS) in _CHROME:
                    continue  # footer, date and page-number boxes repeat on every slide
                if shape.get(_CLASS) == "title":
                    title = " ".join(_inline(p).strip() for p in shape.iter(_P, _H)).strip()
                    if title:
                        first_title = first_title or title
                        walker.add(f"## {title}")
                    continue
                if shape.tag == _FRAME:
                    walker.frame(shape, 0)
                else:
                    walker.blocks(shape)  # groups, custom shapes with their own paragraphs
            notes = page.find("presentation:notes", _NS)
            if notes is not None:
                text = "\n".join(t for t in (_inline(p).strip() for p in notes.iter(_P, _H)) if t)
                if text:
                    walker.add(f"Notes: {text}")
        return ParsedDocument(title=first_title, text="", skipped=skipped,
                              metadata={"format": "odp", "slides": str(len(pages))})
