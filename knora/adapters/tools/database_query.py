"""``database_query``: read-only SQL over the tenant's own ``knowledge_bases``, ``knowledges`` and ``chunks``.

Rather than rewriting the model's SQL to inject tenant filters (fragile), the tenant's rows are copied into a
private in-memory DuckDB of the shared sandbox, then locked (no files, no network, no extensions): isolation
holds by construction.
"""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

import duckdb

from knora.adapters import duckdb_sandbox as sandbox
from knora.adapters.tools import _duckdb
from knora.adapters.tools._datafile import SandboxedTool
from knora.ports.tool import ToolContext, ToolDeps, ToolResult

CHUNK_CAP = 20000


class DatabaseQueryTool(SandboxedTool):
    name = "database_query"
    description = ("Read-only SQL (one SELECT) over tables knowledge_bases(id, name, description, type, "
                   "created_at), knowledges(id, knowledge_base_id, title, file_name, file_type, file_size, "
                   "parse_status, created_at) and chunks(id, knowledge_id, knowledge_base_id, chunk_index, "
                   "chunk_type, content). Use for counts, listings and statistics.")
    parameters: ClassVar[dict[str, Any]] = {"type": "object", "properties": {"sql": {"type": "string"}},
                                            "required": ["sql"]}

    async def _load(self, ctx: ToolContext) -> duckdb.DuckDBPyConnection:
        repos = self.repos
        con = sandbox.connect(self.limits)
        con.execute("CREATE TABLE knowledge_bases(id VARCHAR, name VARCHAR, description VARCHAR, "
                    "type VARCHAR, created_at TIMESTAMP)")
        con.execute("CREATE TABLE knowledges(id VARCHAR, knowledge_base_id VARCHAR, title VARCHAR, "
                    "file_name VARCHAR, file_type VARCHAR, file_size BIGINT, parse_status VARCHAR, "
                    "created_at TIMESTAMP)")
        con.execute("CREATE TABLE chunks(id VARCHAR, knowledge_id VARCHAR, knowledge_base_id VARCHAR, "
                    "chunk_index INTEGER, chunk_type VARCHAR, content VARCHAR)")
        kbs = await repos.kbs.list(ctx.tenant_id)
        if ctx.knowledge_base_ids:
            kbs = [kb for kb in kbs if kb.id in ctx.knowledge_base_ids]
        con.executemany("INSERT INTO knowledge_bases VALUES (?, ?, ?, ?, ?)",
                        [(kb.id, kb.name, kb.description, str(kb.type), kb.created_at.replace(tzinfo=None))
                         for kb in kbs]) if kbs else None
        chunks = 0
        for kb in kbs:
            page = 1
            while True:
                got = await repos.knowledge.list(ctx.tenant_id, kb.id, page=page, page_size=200)
                rows = [(k.id, k.knowledge_base_id, k.title, k.file_name, k.file_type, k.file_size,
                         str(k.parse_status), k.created_at.replace(tzinfo=None)) for k in got.items]
                if rows:
                    con.executemany("INSERT INTO knowledges VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
                for k in got.items:
                    if chunks >= CHUNK_CAP:
                        break
                    cp = await repos.chunks.list(ctx.tenant_id, k.id, page=1, page_size=1000)
                    crow = [(c.id, c.knowledge_id, c.knowledge_base_id, c.chunk_index, str(c.chunk_type),
                             c.content) for c in cp.items]
                    chunks += len(crow)
                    if crow:
                        con.executemany("INSERT INTO chunks VALUES (?, ?, ?, ?, ?, ?)", crow)
                if len(got.items) < 200:
                    break
                page += 1
        sandbox.lock(con)
        return con

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        con = await self._load(ctx)
        try:
            result = await asyncio.to_thread(_duckdb.query, con, str(args["sql"]), self.limits)
        except _duckdb.DataError as exc:
            return ToolResult.fail(str(exc))
        finally:
            con.close()
        return ToolResult(output=_duckdb.as_text(result), data={"display_type": "database_query", **result})


def make(deps: ToolDeps) -> DatabaseQueryTool | None:
    return DatabaseQueryTool(deps) if deps.repos is not None else None
