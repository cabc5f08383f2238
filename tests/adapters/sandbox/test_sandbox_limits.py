"""The sandbox's resource limits: DuckDB's ``memory_limit`` (no spill) stops a query that would grow past it,
scalar builders of one huge value are refused before running, and the time limit interrupts the query itself
(it ends as ``SandboxTimeout``, from DuckDB's interrupt, not from a caller giving up on a thread)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from knora.adapters import duckdb_sandbox as sandbox
from knora.adapters.duckdb_sandbox import DuckDBSandbox, SandboxLimits
from knora.adapters.tools._datafile import SandboxedTool
from knora.adapters.tools.data_analysis import DataAnalysisTool
from knora.adapters.tools.data_schema import DataSchemaTool
from knora.adapters.tools.database_query import DatabaseQueryTool
from knora.ports.sql_sandbox import SandboxOutOfMemory, SandboxTimeout, SqlRefused
from knora.ports.tool import ToolDeps, tool_timeout
from knora.settings import Settings

WIDE = [[i, "x" * 1000] for i in range(2000)]  # 2 MB of text; its self cross join aggregates 4 GB


@pytest.mark.parametrize("sql", [
    "SELECT length(repeat('x', 1000000000)) FROM t",
    "SELECT lpad('x', 1000000000, 'y') FROM t",
    "SELECT RPAD(s, 1000000000) FROM t",
    "SELECT printf('%1000000000d', 1) FROM t",
    "SELECT format('{:>1000000000}', 1) FROM t",
    "SELECT len(range(200000000)) FROM t",
    "SELECT count(*) FROM generate_series(1, 100000000000)",
    "SELECT list_resize([1], 1000000000) FROM t",
    "SELECT bar(1, 0, 1, 1000000000) FROM t",
])
def test_builders_of_one_huge_value_are_refused(sql: str) -> None:
    with pytest.raises(SqlRefused):
        sandbox.validate(sql)


def test_a_column_named_like_a_builder_is_still_readable() -> None:
    result = DuckDBSandbox().query_rows(["range", "format"], [[1, "a"]], "t",
                                        "SELECT range, format FROM t", max_rows=5)
    assert result.rows == [(1, "a")]


def test_a_query_past_the_memory_limit_fails_clearly() -> None:
    box = DuckDBSandbox(SandboxLimits(memory_mb=64))
    with pytest.raises(SandboxOutOfMemory, match="more memory than the sandbox allows"):
        box.query_rows(["i", "s"], WIDE, "t", "SELECT length(string_agg(a.s, '')) FROM t a, t b", max_rows=1)


def test_the_memory_limit_keeps_the_process_small() -> None:
    """Peak RSS of a fresh interpreter that runs the 4 GB aggregate under a 64 MB limit (a subprocess, so the
    figure is this query's and not the test session's; ``VmHWM``, because ``ru_maxrss`` carries the forking
    parent's peak across ``exec``)."""
    script = textwrap.dedent("""
        import re
        from pathlib import Path
        from knora.adapters.duckdb_sandbox import DuckDBSandbox, SandboxLimits
        from knora.ports.sql_sandbox import SandboxOutOfMemory
        rows = [[i, "x" * 1000] for i in range(2000)]
        try:
            DuckDBSandbox(SandboxLimits(memory_mb=64)).query_rows(
                ["i", "s"], rows, "t", "SELECT length(string_agg(a.s, '')) FROM t a, t b", max_rows=1)
        except SandboxOutOfMemory:
            status = Path("/proc/self/status").read_text()
            print(int(re.search(r"VmHWM:\\s+(\\d+) kB", status).group(1)) // 1024)
    """)
    root = Path(sandbox.__file__).parents[2]  # this checkout's knora, whatever the working directory
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=root)
    assert out.stdout.strip(), out.stderr
    assert int(out.stdout) < 512  # MB; the query's result alone would be 4000 MB


def test_a_long_query_is_interrupted_at_the_time_limit() -> None:
    box = DuckDBSandbox(SandboxLimits(timeout_seconds=0.2))
    rows = [[i] for i in range(3000)]
    with pytest.raises(SandboxTimeout, match="stopped after 0.2 s"):
        box.query_rows(["i"], rows, "t", "SELECT count(*) FROM t a, t b, t c", max_rows=1)


def test_the_connection_serves_again_after_an_interrupt() -> None:
    con = sandbox.connect(SandboxLimits())
    sandbox.load_csv(con, "t", sandbox.rows_to_csv(["i"], [[i] for i in range(3000)]))
    sandbox.lock(con)
    try:
        with pytest.raises(SandboxTimeout):
            sandbox.run(con, "SELECT count(*) FROM t a, t b, t c", max_rows=1, timeout_seconds=0.1)
        assert sandbox.run(con, "SELECT count(*) FROM t", max_rows=1).rows == [(3000,)]
    finally:
        con.close()


def test_limits_come_from_the_settings(make_settings: Callable[..., Settings]) -> None:
    limits = SandboxLimits.of(make_settings(sandbox_memory_mb=100, sandbox_threads=2,
                                            sandbox_timeout_seconds=3.0))
    assert limits == SandboxLimits(memory_mb=100, threads=2, timeout_seconds=3.0)
    con = sandbox.connect(limits)
    try:
        sandbox.lock(con)
        got = dict(con.execute("SELECT name, value FROM duckdb_settings() WHERE name IN "
                               "('memory_limit', 'threads', 'max_temp_directory_size')").fetchall())
    finally:
        con.close()
    assert got["threads"] == "2"
    assert got["memory_limit"].startswith(("95", "100", "104"))  # DuckDB prints MiB
    assert got["max_temp_directory_size"].startswith("0")


@pytest.mark.parametrize("tool_class", [DataAnalysisTool, DataSchemaTool, DatabaseQueryTool])
def test_the_sandbox_stops_a_data_tool_before_the_registry_gives_up(
        make_settings: Callable[..., Settings], tool_class: type[SandboxedTool]) -> None:
    """The registry's timeout abandons a thread that keeps running; the sandbox's interrupt stops the query,
    so a data tool's registry timeout is the sandbox's plus a margin, whatever the setting."""
    tool = tool_class(ToolDeps(settings=make_settings(sandbox_timeout_seconds=90.0, sandbox_memory_mb=64)))
    assert tool.limits == SandboxLimits(memory_mb=64, threads=1, timeout_seconds=90.0)
    timeout = tool_timeout(tool)
    assert timeout is not None
    assert timeout > 90.0
