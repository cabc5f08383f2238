"""``data_schema``: table name, columns and row count of a CSV/Excel document (loaded into DuckDB)."""

from __future__ import annotations

from typing import Any, ClassVar

from knora.adapters.tools import _duckdb
from knora.adapters.tools._datafile import SandboxedTool, open_table
from knora.ports.tool import ToolContext, ToolDeps, ToolResult


class DataSchemaTool(SandboxedTool):
    name = "data_schema"
    description = ("Show the table behind a CSV/Excel document (handle dN): "
                   "table name, columns and types, rows.")
    parameters: ClassVar[dict[str, Any]] = {"type": "object",
                                            "properties": {"knowledge_id": {"type": "string"}},
                  "required": ["knowledge_id"]}

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        try:
            _k, name, con = await open_table(self.deps, ctx, str(args["knowledge_id"]))
        except _duckdb.DataError as exc:
            return ToolResult.fail(str(exc))
        try:
            info = _duckdb.schema(con, name)
        finally:
            con.close()
        cols = ", ".join(f"{c['name']} ({c['type']})" for c in info["columns"])
        return ToolResult(output=f"Table {name}: {info['row_count']} rows; columns: {cols}",
                          data={"display_type": "data_schema", **info})


def make(deps: ToolDeps) -> DataSchemaTool | None:
    return DataSchemaTool(deps) if deps.repos is not None and deps.blobs is not None else None
