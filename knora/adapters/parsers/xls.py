"""Legacy Excel ``.xls`` (BIFF, Excel 97-2003) via xlrd: one markdown table per sheet, each sheet a span of
kind "sheet" labelled with its name, rows in ``tables`` for data analysis, dates rendered as dates.

Sheets are loaded one at a time (``on_demand``) and unloaded after use. Cells are bounded per document: past
the limit the remaining rows are left out and named in ``skipped``. Many ``.xls`` files in the wild are not
BIFF at all: an ``.xlsx`` renamed, or an HTML table saved by a web application's "export to Excel" (those go
to their own parser), or an Excel 2003 "XML Spreadsheet" (read here, with entities and network off).
"""

from __future__ import annotations

import io
from collections.abc import Callable
from datetime import datetime

from knora.adapters.parsers._common import TextBuilder, file_stem, markdown_table, trim_rows
from knora.ports.parser import ParsedDocument, ParseError, Parser

MAX_CELLS = 2_000_000  # per document; BIFF8 itself caps a sheet at 65,536 rows × 256 columns
_OLE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"


def _number(value: float) -> str:
    return str(int(value)) if value.is_integer() else repr(value)


def _cell_text(ctype: int, value: object, datemode: int) -> str:
    import xlrd

    if ctype in (xlrd.XL_CELL_EMPTY, xlrd.XL_CELL_BLANK):
        return ""
    if ctype == xlrd.XL_CELL_NUMBER and isinstance(value, float):
        return _number(value)
    if ctype == xlrd.XL_CELL_DATE and isinstance(value, float):
        try:
            moment: datetime = xlrd.xldate.xldate_as_datetime(value, datemode)
        except (ValueError, OverflowError, xlrd.xldate.XLDateError):
            return _number(value)
        if value < 1:  # a time of day without a date
            return moment.time().isoformat()
        return moment.isoformat(sep=" ").removesuffix(" 00:00:00")
    if ctype == xlrd.XL_CELL_BOOLEAN:
        return "TRUE" if value else "FALSE"
    if ctype == xlrd.XL_CELL_ERROR and isinstance(value, int):
        return str(xlrd.error_text_from_code.get(value, "#ERROR"))
    return str(value).strip()


def _cell_value(ctype: int, value: object, datemode: int) -> object:
    """A cell as a typed value for data analysis: float, str, bool, datetime/time, or None."""
    import xlrd

    if ctype in (xlrd.XL_CELL_EMPTY, xlrd.XL_CELL_BLANK):
        return None
    if ctype == xlrd.XL_CELL_DATE and isinstance(value, float):
        try:
            moment = xlrd.xldate.xldate_as_datetime(value, datemode)
        except (ValueError, OverflowError, xlrd.xldate.XLDateError):
            return value
        return moment.time() if value < 1 else moment
    if ctype == xlrd.XL_CELL_BOOLEAN:
        return bool(value)
    if ctype == xlrd.XL_CELL_ERROR:
        return None
    return value


def sheet_rows(data: bytes, max_cells: int = MAX_CELLS) -> list[tuple[str, list[list[object]]]]:
    """(sheet name, rows of typed values) per sheet of a BIFF ``.xls``, for the data-analysis loaders (which
    read the original file); at most ``max_cells`` cells in all. Raises ``xlrd.XLRDError`` (and the struct
    errors of a broken file) as they come."""
    import xlrd

    book = xlrd.open_workbook(file_contents=data, on_demand=True, logfile=io.StringIO())
    out: list[tuple[str, list[list[object]]]] = []
    budget = max_cells
    try:
        for index, name in enumerate(book.sheet_names()):
            sheet = book.sheet_by_index(index)
            rows: list[list[object]] = []
            for r in range(sheet.nrows):
                budget -= sheet.row_len(r)
                if budget < 0:
                    break
                rows.append([_cell_value(t, v, book.datemode)
                             for t, v in zip(sheet.row_types(r), sheet.row_values(r), strict=False)])
            book.unload_sheet(index)
            out.append((name, rows))
            if budget < 0:
                break
    finally:
        book.release_resources()
    return out


class XlsParser:
    extensions: frozenset[str] = frozenset({"xls", "xlt"})

    def __init__(self, xlsx: Callable[[], Parser], html: Callable[[], Parser],
                 max_cells: int = MAX_CELLS) -> None:
        self._xlsx, self._html, self.max_cells = xlsx, html, max_cells

    def parse(self, data: bytes, file_name: str) -> ParsedDocument:
        if data.startswith(b"PK\x03\x04"):
            return self._xlsx().parse(data, file_name)  # an .xlsx under an .xls name
        head = data[:4096].lstrip().lower()
        if head.startswith(b"<?xml") and b"urn:schemas-microsoft-com:office:spreadsheet" in head:
            return self._parse_spreadsheetml(data, file_name)  # Excel 2003 "XML Spreadsheet"
        if head.startswith((b"<html", b"<!doctype", b"<table", b"<?xml")) \
                and b"<table" in data[:1 << 20].lower():
            return self._html().parse(data, file_name)  # a web application's "export to Excel"
        if not data.startswith(_OLE):
            raise ParseError("not an Excel .xls workbook (the file is not an Office binary document)")
        return self._parse_biff(data, file_name)

    def _parse_biff(self, data: bytes, file_name: str) -> ParsedDocument:
        import xlrd

        try:
            book = xlrd.open_workbook(file_contents=data, on_demand=True, logfile=io.StringIO())
        except xlrd.XLRDError as exc:
            if "encrypt" in str(exc).lower():
                raise ParseError("the .xls workbook is password-protected (encrypted); remove the password "
                                 "and upload it again") from exc
            raise ParseError(f"the .xls file is damaged or not an Excel workbook: {exc}") from exc
        except Exception as exc:  # xlrd raises struct/index/assertion errors for broken BIFF streams
            raise ParseError("the .xls file is damaged or not an Excel workbook: "
                             f"{type(exc).__name__}: {exc}") from exc
        out = _Sheets(self.max_cells)
        try:
            for index, name in enumerate(book.sheet_names()):
                if out.full(name):
                    continue
                try:
                    sheet = book.sheet_by_index(index)
                except Exception as exc:
                    out.skipped.append(f"sheet {name!r}: it could not be read ({type(exc).__name__}: {exc})")
                    continue
                rows: list[list[str]] = []
                for r in range(sheet.nrows):
                    if not out.take(name, sheet.row_len(r), r, sheet.nrows):
                        break
                    rows.append([_cell_text(t, v, book.datemode)
                                 for t, v in zip(sheet.row_types(r), sheet.row_values(r), strict=False)])
                book.unload_sheet(index)
                out.add(index + 1, name, rows)
        finally:
            book.release_resources()
        return out.document(file_name, "xls")

    def _parse_spreadsheetml(self, data: bytes, file_name: str) -> ParsedDocument:
        from lxml import etree

        parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False)
        try:
            root = etree.fromstring(data, parser)
        except (etree.XMLSyntaxError, ValueError) as exc:
            raise ParseError(f"the Excel XML spreadsheet is malformed XML: {exc}") from exc
        out = _Sheets(self.max_cells)
        for number, sheet in enumerate(root.iter(f"{{{_SS}}}Worksheet"), start=1):
            name = sheet.get(f"{{{_SS}}}Name") or f"Sheet{number}"
            if out.full(name):
                continue
            xml_rows = list(sheet.iter(f"{{{_SS}}}Row"))
            rows: list[list[str]] = []
            for r, row in enumerate(xml_rows):
                cells: list[str] = []
                for cell in row.iter(f"{{{_SS}}}Cell"):
                    index = cell.get(f"{{{_SS}}}Index")
                    if index and index.isdigit():  # a jump over empty cells (1-based)
                        cells.extend([""] * max(min(int(index), _MAX_XML_COLUMN) - 1 - len(cells), 0))
                    data_el = cell.find(f"{{{_SS}}}Data")
                    text = "".join(data_el.itertext()).strip() if data_el is not None else ""
                    if data_el is not None and data_el.get(f"{{{_SS}}}Type") == "DateTime":
                        text = text.removesuffix(".000").removesuffix("T00:00:00").replace("T", " ")
                    cells.append(text)
                if not out.take(name, len(cells), r, len(xml_rows)):
                    break
                rows.append(cells)
            out.add(number, name, rows)
        return out.document(file_name, "xls")


_SS = "urn:schemas-microsoft-com:office:spreadsheet"
_MAX_XML_COLUMN = 16_384  # Excel's own column limit


class _Sheets:
    """Collects sheets under one cell budget and builds the document: a span of kind "sheet" per
    non-empty sheet, its rows in ``tables``, what the budget left out in ``skipped``."""

    def __init__(self, max_cells: int) -> None:
        self.max_cells = self.budget = max_cells
        self.builder = TextBuilder()
        self.tables: list[list[list[str]]] = []
        self.names: list[str] = []
        self.skipped: list[str] = []

    def full(self, name: str) -> bool:
        if self.budget > 0:
            return False
        self.skipped.append(f"sheet {name!r}: the document's cell limit ({self.max_cells}) was reached")
        return True

    def take(self, name: str, cells: int, row: int, rows: int) -> bool:
        """Room for a row of ``cells`` cells? If not, the rest of the sheet is named in ``skipped``."""
        if cells > self.budget:
            self.skipped.append(f"sheet {name!r}: rows {row + 1}–{rows} (the document's cell limit of "
                                f"{self.max_cells} was reached)")
            self.budget = 0
            return False
        self.budget -= cells
        return True

    def add(self, number: int, name: str, rows: list[list[str]]) -> None:
        rows = trim_rows(rows)
        if rows:
            self.names.append(name)
            self.tables.append(rows)
            self.builder.add(f"## {name}\n\n{markdown_table(rows)}", page=number, kind="sheet", label=name)

    def document(self, file_name: str, fmt: str) -> ParsedDocument:
        if not self.tables:
            raise ParseError("the workbook has no non-empty sheets")
        return ParsedDocument(title=file_stem(file_name), text=self.builder.text, tables=self.tables,
                              pages=self.builder.pages, skipped=self.skipped,
                              metadata={"format": fmt, "sheets": ", ".join(self.names)})
