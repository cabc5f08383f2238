"""DuckDB helpers for the data tools: load a CSV/XLSX document into an in-memory table, then lock it down.

After loading, external access is switched off and the configuration locked, so the model's SQL can read the
loaded table and nothing else (no files, no network, no extensions); only one SELECT/WITH statement is accepted.
"""

from __future__ import annotations

import csv
import io
import re
import tempfile
from pathlib import Path
from typing import Any

import duckdb

MAX_ROWS = 200
_READ_ONLY = re.compile(r"^\s*(select|with)\b", re.IGNORECASE)
_FORBIDDEN = re.compile(r"\b(attach|copy|install|load|pragma|set|create|insert|update|delete|drop|alter|export|"
                        r"import|call)\b", re.IGNORECASE)


class DataError(Exception):
    pass


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


def load(data: bytes, file_type: str, name: str) -> duckdb.DuckDBPyConnection:
    kind = (file_type or "").lower().lstrip(".")
    extra = ""
    if kind in ("xlsx", "xlsm"):
        data = _xlsx_to_csv(data)
        extra = ", types={'__sheet_name': 'VARCHAR'}"
    elif kind not in ("csv", "tsv", "txt"):
        raise DataError(f"data tools read CSV or Excel documents, not {file_type or 'unknown'} files")
    con = duckdb.connect(":memory:")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "data.csv"
        path.write_bytes(data)
        con.execute(f'CREATE TABLE "{name}" AS SELECT * FROM read_csv_auto(?, header=true{extra})', [str(path)])
    lock(con)
    return con


def lock(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")


def schema(con: duckdb.DuckDBPyConnection, name: str) -> dict[str, Any]:
    cols = con.execute(f'DESCRIBE "{name}"').fetchall()
    count = con.execute(f'SELECT count(*) FROM "{name}"').fetchone()
    return {"table_name": name, "columns": [{"name": c[0], "type": c[1]} for c in cols],
            "row_count": int(count[0]) if count else 0}


def query(con: duckdb.DuckDBPyConnection, sql: str, max_rows: int = MAX_ROWS) -> dict[str, Any]:
    text = sql.strip().rstrip(";")
    if not _READ_ONLY.match(text) or ";" in text or _FORBIDDEN.search(text):
        raise DataError("only one read-only SELECT (or WITH … SELECT) statement is allowed")
    try:
        cur = con.execute(text)
    except duckdb.Error as exc:
        raise DataError(f"SQL error: {exc}") from exc
    columns = [d[0] for d in cur.description or []]
    rows = cur.fetchmany(max_rows + 1)
    return {"columns": columns, "rows": [[_plain(v) for v in r] for r in rows[:max_rows]],
            "truncated": len(rows) > max_rows}


def _plain(v: Any) -> Any:
    return v if v is None or isinstance(v, int | float | str | bool) else str(v)


def as_text(result: dict[str, Any]) -> str:
    lines = [" | ".join(result["columns"])]
    lines += [" | ".join("" if v is None else str(v) for v in row) for row in result["rows"]]
    if result["truncated"]:
        lines.append(f"... (first {len(result['rows'])} rows shown)")
    return "\n".join(lines)
