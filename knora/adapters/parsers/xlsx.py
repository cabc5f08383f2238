"""Excel workbooks via openpyxl (read-only, cached values): one markdown table per sheet, rows in ``tables``.

Read-only mode streams rows instead of building the whole workbook in memory; the zip container is
decompressed under a budget (``zipguard``) before openpyxl sees the rewritten copy.
"""

from __future__ import annotations

import io
import warnings
from datetime import date, datetime, time

from knora.adapters.parsers._common import (
    DEFAULT_MAX_EXPANDED_BYTES,
    file_stem,
    markdown_table,
    normalise_text,
    trim_rows,
)
from knora.adapters.parsers.zipguard import bounded_archive
from knora.ports.parser import ParsedDocument, ParseError

_MAX_ROWS_PER_SHEET = 1_000_000


def _cell_text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, datetime):
        return value.isoformat(sep=" ").removesuffix(" 00:00:00").removesuffix("T00:00:00")
    if isinstance(value, (date, time)):
        return value.isoformat()
    return str(value).strip()


class XlsxParser:
    extensions: frozenset[str] = frozenset({"xlsx", "xlsm"})

    def __init__(self, max_expanded_bytes: int = DEFAULT_MAX_EXPANDED_BYTES) -> None:
        self.max_expanded_bytes = max_expanded_bytes

    def parse(self, data: bytes, file_name: str) -> ParsedDocument:
        data = bounded_archive(data, self.max_expanded_bytes, "xlsx")
        import openpyxl

        tables: list[list[list[str]]] = []
        blocks: list[str] = []
        sheet_names: list[str] = []
        try:
            with warnings.catch_warnings():
                # openpyxl warns about styles/extensions it does not implement; they do not affect cell
                # values.
                warnings.simplefilter("ignore", UserWarning)
                workbook = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
                try:
                    title = (workbook.properties.title or "").strip() if workbook.properties else ""
                    for sheet in workbook.worksheets:
                        rows: list[list[str]] = []
                        for i, row in enumerate(sheet.iter_rows(values_only=True)):
                            if i >= _MAX_ROWS_PER_SHEET:
                                raise ParseError(f"sheet {sheet.title!r} has more than "
                                                 f"{_MAX_ROWS_PER_SHEET} rows")
                            rows.append([_cell_text(v) for v in row])
                        rows = trim_rows(rows)
                        if not rows:
                            continue
                        sheet_names.append(sheet.title)
                        tables.append(rows)
                        blocks.append(f"## {sheet.title}\n\n{markdown_table(rows)}")
                finally:
                    workbook.close()
        except ParseError:
            raise
        except Exception as exc:  # openpyxl raises KeyError/ValueError/zip/lxml errors for broken workbooks
            raise ParseError("the .xlsx file is damaged or not an Excel workbook: "
                             f"{type(exc).__name__}: {exc}") from exc
        if not tables:
            raise ParseError("the workbook has no non-empty sheets")
        return ParsedDocument(title=title or file_stem(file_name), text=normalise_text("\n\n".join(blocks)),
                              tables=tables, metadata={"format": "xlsx", "sheets": ", ".join(sheet_names)})
