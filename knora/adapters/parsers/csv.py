"""CSV (and TSV): rows kept as ``ParsedDocument.tables`` for data analysis and rendered as a markdown table.

The delimiter is sniffed from the first lines so semicolon-separated exports (common in Europe) work too.
"""

from __future__ import annotations

import csv
import io

from knora.adapters.parsers._common import decode_text, file_stem, markdown_table, normalise_text, trim_rows
from knora.ports.parser import ParsedDocument, ParseError

_MAX_FIELD = 10 * 1024 * 1024


class CsvParser:
    extensions: frozenset[str] = frozenset({"csv", "tsv"})

    def parse(self, data: bytes, file_name: str) -> ParsedDocument:
        text = decode_text(data).replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")
        if file_name.lower().endswith(".tsv"):
            delimiter = "\t"
        else:
            try:
                delimiter = csv.Sniffer().sniff(text[:8192], delimiters=",;\t|").delimiter
            except csv.Error:
                delimiter = ","
        csv.field_size_limit(_MAX_FIELD)
        try:
            rows = trim_rows([[cell.strip() for cell in row]
                              for row in csv.reader(io.StringIO(text), delimiter=delimiter)])
        except csv.Error as exc:
            raise ParseError(f"malformed CSV: {exc}") from exc
        if not rows:
            raise ParseError("the CSV file has no rows")
        return ParsedDocument(title=file_stem(file_name), text=normalise_text(markdown_table(rows)),
                              tables=[rows], metadata={"format": "csv", "rows": str(len(rows))})
