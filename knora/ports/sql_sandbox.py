"""A read-only SQL sandbox over one in-memory table: what the quick-answer ``data_analysis`` stage needs.

The model writes the SQL, so the sandbox is a security boundary. Services reach it only through this
Protocol (the DuckDB implementation is ``knora/adapters/duckdb_sandbox.py``), so there is one sandbox with one
blocklist for the pipeline and the agent's data tools alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

# One cell as DuckDB hands it back (numbers, text, dates, decimals …); callers render it, never interpret it.
Cell = object


class SandboxError(Exception):
    """The SQL was refused or failed to run."""


class SqlRefused(SandboxError):
    """Refused before running: not one read-only SELECT over the loaded table(s)."""


class SandboxTimeout(SandboxError):
    """Stopped by the sandbox's time limit (the query was interrupted, not abandoned in a thread)."""


class SandboxOutOfMemory(SandboxError):
    """The query needed more memory than the sandbox's limit."""


@dataclass(frozen=True)
class QueryResult:
    columns: list[str]
    rows: list[tuple[Cell, ...]]
    truncated: bool  # more rows matched than ``max_rows``


class SqlSandbox(Protocol):
    def query_rows(self, header: Sequence[str], rows: Sequence[Sequence[Cell]], table: str, sql: str, *,
                   max_rows: int) -> QueryResult:
        """Load ``rows`` as ``table``, lock the database down, run ``sql`` (refused unless it reads only
        ``table``); raises ``SandboxError``."""
        ...
