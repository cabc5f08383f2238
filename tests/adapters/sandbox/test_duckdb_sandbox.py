"""The one DuckDB sandbox: every file, network, extension, ATTACH and settings path is refused twice over —
by the static check, and (with the check bypassed) by DuckDB's own ``enable_external_access`` and
``lock_configuration``.

``UNSAFE_SQL`` is shared with the pipeline's and the tools' tests: the same list is refused from both callers.
"""

from __future__ import annotations

import duckdb
import pytest

from knora.adapters import duckdb_sandbox as sandbox
from knora.ports.sql_sandbox import SqlRefused

# (sql, reaches outside the table at run time) — the second part is what DuckDB's own lock must stop.
UNSAFE_SQL: list[tuple[str, bool]] = [
    ("SELECT * FROM read_csv('/etc/passwd')", True),
    ("SELECT * FROM read_csv_auto('/etc/passwd')", True),
    ("SELECT * FROM read_parquet('/etc/passwd')", True),
    ("SELECT * FROM read_json('/etc/passwd')", True),
    ("SELECT * FROM read_json_auto('/etc/passwd')", True),
    ("SELECT * FROM read_text('/etc/passwd')", True),
    ("SELECT * FROM read_blob('/etc/passwd')", True),
    ("SELECT * FROM parquet_scan('/etc/passwd')", True),
    ("SELECT * FROM sniff_csv('/etc/passwd')", True),
    ("SELECT * FROM glob('/etc/*')", True),
    ("SELECT * FROM '/etc/passwd'", False),
    ("SELECT * FROM sales, '/etc/passwd'", False),
    ("WITH x AS (SELECT * FROM read_csv('/etc/passwd')) SELECT * FROM x", True),
    ("SELECT * FROM read_csv('https://example.com/a.csv')", True),
    ("SELECT * FROM 'https://example.com/a.parquet'", False),
    ("SELECT * FROM 's3://bucket/a.parquet'", False),
    ("INSTALL httpfs", True),
    ("LOAD httpfs", True),
    ("SELECT 1; LOAD httpfs", False),
    ("ATTACH '/tmp/knora-sandbox-test.db' AS other", True),
    ("SELECT 1; ATTACH ':memory:' AS other", False),
    ("COPY sales TO '/tmp/knora-sandbox-test.csv'", True),
    ("COPY (SELECT * FROM sales) TO '/tmp/knora-sandbox-test.csv'", True),
    ("EXPORT DATABASE '/tmp/knora-sandbox-export'", True),
    ("SELECT getenv('HOME')", False),
    ("SET enable_external_access = true", True),
    ("SET lock_configuration = false", True),
    ("RESET enable_external_access", True),
    ("PRAGMA version", False),
    ("CALL pragma_version()", False),
    ("SELECT current_setting('home_directory')", False),
    ("SELECT * FROM duckdb_settings()", False),
    ("SELECT * FROM query('SELECT 1')", False),
    ("CREATE TABLE copy_of AS SELECT * FROM sales", False),
    ("DROP TABLE sales", False),
    ("DELETE FROM sales", False),
    ("UPDATE sales SET n = 0", False),
]
SAFE_SQL = ["SELECT region, sum(n) AS total FROM sales GROUP BY region ORDER BY region",
            "WITH t AS (SELECT * FROM sales) SELECT count(*) FROM t",
            "select * from sales;"]


@pytest.fixture
def con() -> duckdb.DuckDBPyConnection:
    c = sandbox.connect()
    sandbox.load_csv(c, "sales", b"region,n\nnorth,1\nsouth,2\n")
    sandbox.lock(c)
    yield c
    c.close()


@pytest.mark.parametrize("sql", [s for s, _ in UNSAFE_SQL])
def test_static_check_refuses(sql: str) -> None:
    with pytest.raises(SqlRefused):
        sandbox.validate(sql)


@pytest.mark.parametrize("sql", [s for s, outside in UNSAFE_SQL if outside])
def test_locked_database_refuses_even_without_the_check(con: duckdb.DuckDBPyConnection, sql: str) -> None:
    with pytest.raises(duckdb.Error):
        con.execute(sql).fetchall()


@pytest.mark.parametrize("sql", SAFE_SQL)
def test_read_only_selects_run(con: duckdb.DuckDBPyConnection, sql: str) -> None:
    assert sandbox.run(con, sql, max_rows=10).rows


def test_the_pipeline_rule_limits_tables() -> None:
    with pytest.raises(SqlRefused):
        sandbox.validate("SELECT * FROM other", tables={"sales"})
    assert sandbox.validate("SELECT * FROM sales;", tables={"sales"}) == "SELECT * FROM sales"


def test_query_rows_loads_locks_and_caps() -> None:
    result = sandbox.DuckDBSandbox().query_rows(["a"], [[1], [2], [3]], "t", "SELECT a FROM t ORDER BY a",
                                                max_rows=2)
    assert result.columns == ["a"]
    assert result.rows == [(1,), (2,)]
    assert result.truncated
    with pytest.raises(SqlRefused):
        sandbox.DuckDBSandbox().query_rows(["a"], [[1]], "t", "SELECT * FROM read_csv('/etc/passwd')",
                                           max_rows=2)
