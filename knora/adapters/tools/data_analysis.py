"""``data_analysis``: one read-only SQL query over a CSV/Excel document in an in-memory, locked DuckDB."""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

from knora.adapters.tools import _duckdb
from knora.adapters.tools._datafile import SandboxedTool, open_table
from knora.ports.tool import ToolContext, ToolDeps, ToolResult


class DataAnalysisTool(SandboxedTool):
    name = "data_analysis"
    description = ("Run one read-only SQL SELECT over the table of a CSV/Excel document (handle dN). Call "
                   "data_schema first for the table and column names. Excel sheets share one table with a "
                   "__sheet_name column.")
    parameters: ClassVar[dict[str, Any]] = {"type": "object",
                                            "properties": {"knowledge_id": {"type": "string"},
                                                           "sql": {"type": "string"}},
                  "required": ["knowledge_id", "sql"]}

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        try:
            _k, name, con = await open_table(self.deps, ctx, str(args["knowledge_id"]))
        except _duckdb.DataError as exc:
            return ToolResult.fail(str(exc))
        try:
            result = await asyncio.to_thread(_duckdb.query, con, str(args["sql"]), self.limits)
        except _duckdb.DataError as exc:
            return ToolResult.fail(str(exc))
        finally:
            con.close()
        return ToolResult(output=_duckdb.as_text(result),
                          data={"display_type": "data_analysis", "table_name": name, **result})


def make(deps: ToolDeps) -> DataAnalysisTool | None:
    return DataAnalysisTool(deps) if deps.repos is not None and deps.blobs is not None else None
