"""DuckDB helpers for the data tools: a CSV/XLSX document as one table in the shared sandbox
(``knora/adapters/duckdb_sandbox.py``), its schema, and results as text.

Loading, locking and the SQL check are the sandbox's, so the tools refuse exactly what the quick-answer
pipeline refuses: one read-only SELECT/WITH over the loaded tables, no files, network, extensions or settings.
"""

from __future__ import annotations

import csv
import io
import re
from typing import Any

import duckdb

from knora.adapters import duckdb_sandbox as sandbox
from knora.ports.sql_sandbox import SandboxError

MAX_ROWS = 200
DataError = SandboxError  # the tools' failures are the sandbox's: one error type to catch


def table_name(title: str) -> str:
    stem = re.sub(r"\.[A-Za-z0-9]+$", "", title or "")
    name = re.sub(r"[^A-Za-z0-9_]+", "_", stem).strip("_").lower()
    return name if name and not name[0].isdigit() else f"t_{name}" if name else "data"


def _xlsx_to_csv(data: bytes) -> bytes:
    import openpyxl

    wb = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    headers: list[str] = []
    rows: list[dict[str, Any]] = []
    for ws in wb.worksheets:
        it = ws.iter_rows(values_only=True)
        head = next(it, None)
        if not head:
            continue
        cols = [str(h) if h is not None else f"column{i}" for i, h in enumerate(head)]
        headers += [c for c in cols if c not in headers]
        for values in it:
            if values and any(v is not None for v in values):
                rows.append({"__sheet_name": ws.title, **dict(zip(cols, values, strict=False))})
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=["__sheet_name", *headers])
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue().encode()


def _xls_to_csv(data: bytes) -> bytes:
    """A legacy ``.xls`` as the same one-table CSV as an ``.xlsx`` (``__sheet_name`` plus the union of the
    sheets' header rows)."""
    from knora.adapters.parsers.xls import sheet_rows

    headers: list[str] = []
    rows: list[dict[str, Any]] = []
    for title, values in sheet_rows(data):
        if not values:
            continue
        cols = [str(h) if h not in (None, "") else f"column{i}" for i, h in enumerate(values[0])]
        headers += [c for c in cols if c not in headers]
        for row in values[1:]:
            if any(v not in (None, "") for v in row):
                rows.append({"__sheet_name": title, **dict(zip(cols, row, strict=False))})
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=["__sheet_name", *headers])
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue().encode()


def load(data: bytes, file_type: str, name: str, limits: sandbox.SandboxLimits) -> duckdb.DuckDBPyConnection:
    kind = (file_type or "").lower().lstrip(".")
    types: dict[str, str] | None = None
    if kind in ("xlsx", "xlsm", "xls"):
        if kind != "xls" or data.startswith(b"PK\x03\x04"):  # an .xlsx renamed .xls is still an .xlsx
            data = _xlsx_to_csv(data)
        else:
            try:
                data = _xls_to_csv(data)
            except Exception as exc:  # xlrd raises XLRDError, struct and index errors for a broken file
                raise DataError(f"the .xls workbook cannot be read: {type(exc).__name__}: {exc}") from exc
        types = {"__sheet_name": "VARCHAR"}
    elif kind not in ("csv", "tsv", "txt"):
        raise DataError(f"data tools read CSV or Excel documents, not {file_type or 'unknown'} files")
    con = sandbox.connect(limits)
    sandbox.load_csv(con, name, data, column_types=types)
    sandbox.lock(con)
    return con


def schema(con: duckdb.DuckDBPyConnection, name: str) -> dict[str, Any]:
    cols = con.execute(f'DESCRIBE "{name}"').fetchall()
    count = con.execute(f'SELECT count(*) FROM "{name}"').fetchone()
    return {"table_name": name, "columns": [{"name": c[0], "type": c[1]} for c in cols],
            "row_count": int(count[0]) if count else 0}


def query(con: duckdb.DuckDBPyConnection, sql: str, limits: sandbox.SandboxLimits, max_rows: int = MAX_ROWS
          ) -> dict[str, Any]:
    result = sandbox.run(con, sql, max_rows=max_rows, timeout_seconds=limits.timeout_seconds)
    return {"columns": result.columns, "rows": [[_plain(v) for v in r] for r in result.rows],
            "truncated": result.truncated}


def _plain(v: Any) -> Any:
    return v if v is None or isinstance(v, int | float | str | bool) else str(v)


def as_text(result: dict[str, Any]) -> str:
    lines = [" | ".join(result["columns"])]
    lines += [" | ".join("" if v is None else str(v) for v in row) for row in result["rows"]]
    if result["truncated"]:
        lines.append(f"... (first {len(result['rows'])} rows shown)")
    return "\n".join(lines)
