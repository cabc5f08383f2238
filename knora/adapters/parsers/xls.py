"""Legacy Excel ``.xls`` (BIFF, Excel 97-2003) via xlrd: one markdown table per sheet, each sheet a span of
kind "sheet" labelled with its name, rows in ``tables`` for data analysis, dates rendered as dates.

Sheets are loaded one at a time (``on_demand``) and unloaded after use. Cells are bounded per document: past
the limit the remaining rows are left out and named in ``skipped``. Many ``.xls`` files in the wild are not
BIFF at all: an ``.xlsx`` renamed, or an HTML table saved by a web application's "export to Excel"; those go
to their own parser.
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
        head = data[:2048].lstrip().lower()
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
        builder = TextBuilder()
        tables: list[list[list[str]]] = []
        names: list[str] = []
        skipped: list[str] = []
        budget = self.max_cells
        try:
            for index, name in enumerate(book.sheet_names()):
                if budget <= 0:
                    skipped.append(f"sheet {name!r}: the document's cell limit ({self.max_cells}) was "
                                   "reached")
                    continue
                try:
                    sheet = book.sheet_by_index(index)
                except Exception as exc:
                    skipped.append(f"sheet {name!r}: it could not be read ({type(exc).__name__}: {exc})")
                    continue
                rows: list[list[str]] = []
                for r in range(sheet.nrows):
                    width = sheet.row_len(r)
                    if width > budget:
                        skipped.append(f"sheet {name!r}: rows {r + 1}–{sheet.nrows} (the document's cell "
                                       f"limit of {self.max_cells} was reached)")
                        budget = 0
                        break
                    budget -= width
                    rows.append([_cell_text(t, v, book.datemode)
                                 for t, v in zip(sheet.row_types(r), sheet.row_values(r), strict=False)])
                book.unload_sheet(index)
                rows = trim_rows(rows)
                if not rows:
                    continue
                names.append(name)
                tables.append(rows)
                builder.add(f"## {name}\n\n{markdown_table(rows)}", page=index + 1, kind="sheet", label=name)
        finally:
            book.release_resources()
        if not tables:
            raise ParseError("the workbook has no non-empty sheets")
        return ParsedDocument(title=file_stem(file_name), text=builder.text, tables=tables,
                              pages=builder.pages, skipped=skipped,
                              metadata={"format": "xls", "sheets": ", ".join(names)})
