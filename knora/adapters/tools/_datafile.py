"""Finding the CSV/XLSX behind a document handle for the data tools (scope-checked)."""

from __future__ import annotations

from typing import Any

import duckdb

from knora.adapters.duckdb_sandbox import SandboxLimits
from knora.adapters.tools import _duckdb
from knora.adapters.tools._base import BaseTool, in_scope, need
from knora.ports.tool import ToolContext, ToolDeps


class SandboxedTool(BaseTool):
    """A data tool: its DuckDB runs under the settings' sandbox limits, and the registry's timeout is the
    sandbox's plus a margin, so the sandbox's interrupt (which really stops the query) always fires first."""

    def __init__(self, deps: ToolDeps) -> None:
        super().__init__(deps)
        self.limits = SandboxLimits.of(deps.settings)
        self.timeout_seconds = self.limits.timeout_seconds + 5.0


async def open_table(deps: ToolDeps, ctx: ToolContext, knowledge_id: str) -> tuple[Any, str,
                                                                                   duckdb.DuckDBPyConnection]:
    k = await need(deps.repos, "the document store").knowledge.get(ctx.tenant_id, knowledge_id)
    if k is None or not in_scope(ctx, k):
        raise _duckdb.DataError(f"document not found: {knowledge_id}")
    if not k.file_path:
        raise _duckdb.DataError(f"document {k.title or k.id} has no stored file")
    data = await need(deps.blobs, "the file store").get(k.file_path)
    name = _duckdb.table_name(k.file_name or k.title)
    ext = k.file_type or (k.file_name.rsplit(".", 1)[-1] if "." in k.file_name else "")
    return k, name, _duckdb.load(data, ext, name, SandboxLimits.of(deps.settings))
