"""The one DuckDB sandbox: model-written SQL over tables loaded into a private in-memory database.

Used by the quick-answer ``data_analysis`` stage (through ``ports.sql_sandbox.SqlSandbox``) and by the agent's
``data_analysis``, ``data_schema`` and ``database_query`` tools. Two locks, so that either alone holds:

1. a static check (``validate``): exactly one ``SELECT``/``WITH`` statement that names no file, network,
   extension, settings or catalogue function or statement (the union of what the pipeline and the tools
   used to block, and more);
2. DuckDB's own switches, set once the tables are loaded: ``enable_external_access = false`` (no files, no
   URLs, no extension loading, no ATTACH) and ``lock_configuration = true`` (so no ``SET`` undoes the first).

Resources (``SandboxLimits``: ``sandbox_memory_mb``, ``sandbox_threads``, ``sandbox_timeout_seconds``):
DuckDB's ``memory_limit`` with no spill to disk and few threads, set before the lock, bounds what DuckDB's
buffer manager holds (joins, aggregates, sorts, recursive CTEs); scalar functions that build one huge value
from a small input (``repeat``, ``lpad``, ``range`` as a list …) allocate outside it, so the static check
refuses them. The time limit is a timer that calls ``con.interrupt()``: the query really stops (a thread
abandoned by ``asyncio.wait_for`` would keep running and holding its memory) and ends as ``SandboxTimeout``.
"""

from __future__ import annotations

import csv
import io
import re
import tempfile
import threading
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

import duckdb

from knora.ports.sql_sandbox import (
    Cell,
    QueryResult,
    SandboxError,
    SandboxOutOfMemory,
    SandboxTimeout,
    SqlRefused,
)
from knora.settings import Settings

_READ_ONLY = re.compile(r"^\s*(select|with)\b", re.IGNORECASE)
# Statements that change state, settings or the catalogue, and every function that reaches outside the table.
_FORBIDDEN = re.compile(
    r"\b(attach|detach|copy|install|load|pragma|set|reset|create|insert|update|delete|drop|alter|export|import|"
    r"call|secret|glob|getenv|httpfs|query|query_table|sniff_csv|current_setting|"
    r"read_\w+|\w+_scan|duckdb_\w+)\b"
    # one call, one huge value: these allocate outside DuckDB's memory_limit (repeat('x', 1e9) is 1 GB)
    r"|\b(repeat|repeat_row|lpad|rpad|printf|format|bar|range|generate_series|list_resize|array_resize)\s*\("
    r"|\b(https?|s3a?|s3n|gcs|gs|r2|az|azure|abfss|hf|file)://"
    r"|\b(from|join)\s*\(?\s*'"  # FROM 'file.csv': DuckDB's replacement scan reads files named as strings
    r"|'(/|~|\.\.?/|[a-z]:[\\/])",  # a path-shaped string literal
    re.IGNORECASE)
_TABLE_REF = re.compile(r"(?i)\b(?:from|join)\s+\"?([A-Za-z_][\w]*)")
REFUSED = "only one read-only SELECT (or WITH … SELECT) statement is allowed"


def validate(sql: str, *, tables: Collection[str] | None = None) -> str:
    """The statement to run (trimmed, no trailing ``;``), or ``SqlRefused``. With ``tables``, every
    ``FROM``/``JOIN`` must name one of them (the pipeline's extra rule: its prompt offers one table)."""
    text = sql.strip().rstrip(";").strip()
    if not text or ";" in text or not _READ_ONLY.match(text) or _FORBIDDEN.search(text):
        raise SqlRefused(REFUSED)
    if tables is not None and not set(_TABLE_REF.findall(text)) <= set(tables):
        raise SqlRefused(f"the query may read only {', '.join(sorted(tables))}")
    return text


@dataclass(frozen=True)
class SandboxLimits:
    memory_mb: int = 512
    threads: int = 1
    timeout_seconds: float = 30.0

    @classmethod
    def of(cls, settings: Settings | None) -> SandboxLimits:
        if settings is None:
            return cls()
        return cls(memory_mb=settings.sandbox_memory_mb, threads=settings.sandbox_threads,
                   timeout_seconds=settings.sandbox_timeout_seconds)


def connect(limits: SandboxLimits | None = None) -> duckdb.DuckDBPyConnection:
    """A private in-memory database with its resource limits set (they are locked with the rest by ``lock``),
    still open to the loader (call ``lock`` before running model SQL)."""
    lim = limits or SandboxLimits()
    con = duckdb.connect(":memory:")
    con.execute(f"SET memory_limit = '{max(int(lim.memory_mb), 16)}MB'")
    con.execute(f"SET threads = {max(int(lim.threads), 1)}")
    con.execute("SET max_temp_directory_size = '0KiB'")  # nothing spills to disk: the limit is the limit
    return con


def lock(con: duckdb.DuckDBPyConnection) -> None:
    """No files, URLs, extensions or ATTACH from now on, and no ``SET`` to undo that."""
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")


def load_csv(con: duckdb.DuckDBPyConnection, table: str, data: bytes, *,
             column_types: dict[str, str] | None = None) -> None:
    """``CREATE TABLE table`` from CSV bytes, types inferred by DuckDB (via a private temporary file, because
    ``read_csv_auto`` reads files; the sandbox is locked only afterwards)."""
    extra = ""
    if column_types:
        extra = ", types={" + ", ".join(f"'{k}': '{v}'" for k, v in column_types.items()) + "}"
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "data.csv"
        path.write_bytes(data)
        con.execute(f'CREATE TABLE "{table}" AS SELECT * FROM read_csv_auto(?, header=true{extra})',
                    [str(path)])


def rows_to_csv(header: Sequence[str], rows: Sequence[Sequence[Cell]]) -> bytes:
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(header)
    w.writerows(rows)
    return buf.getvalue().encode("utf-8")


def run(con: duckdb.DuckDBPyConnection, sql: str, *, max_rows: int, tables: Collection[str] | None = None,
        timeout_seconds: float = SandboxLimits.timeout_seconds) -> QueryResult:
    """Validate, then run on a locked connection, interrupted after ``timeout_seconds``; at most ``max_rows``
    rows come back."""
    text = validate(sql, tables=tables)
    timer = threading.Timer(timeout_seconds, con.interrupt)
    timer.daemon = True
    timer.start()
    try:
        cur = con.execute(text)
        columns = [d[0] for d in cur.description or []]
        got = cur.fetchmany(max_rows + 1)
    except duckdb.InterruptException as exc:
        raise SandboxTimeout(f"the query was stopped after {timeout_seconds:g} s (the sandbox's time limit)"
                             ) from exc
    except duckdb.OutOfMemoryException as exc:
        raise SandboxOutOfMemory(f"the query needs more memory than the sandbox allows: {exc}") from exc
    except duckdb.Error as exc:
        raise SandboxError(f"SQL error: {exc}") from exc
    finally:
        timer.cancel()
    rows = [tuple(r) for r in got[:max_rows]]
    return QueryResult(columns=columns, rows=rows, truncated=len(got) > max_rows)


class DuckDBSandbox:
    """``SqlSandbox`` over DuckDB: one fresh, locked, resource-limited database per query."""

    def __init__(self, limits: SandboxLimits | None = None) -> None:
        self.limits = limits or SandboxLimits()

    def query_rows(self, header: Sequence[str], rows: Sequence[Sequence[Cell]], table: str, sql: str, *,
                   max_rows: int) -> QueryResult:
        validate(sql, tables={table})  # refuse before loading anything
        con = connect(self.limits)
        try:
            load_csv(con, table, rows_to_csv(header, rows))
            lock(con)
            return run(con, sql, max_rows=max_rows, tables={table},
                       timeout_seconds=self.limits.timeout_seconds)
        finally:
            con.close()
