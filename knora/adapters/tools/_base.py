"""Shared bits of the built-in tools: a base with the Tool attributes, scope helpers, row shaping."""

from __future__ import annotations

from typing import Any, ClassVar, TypeVar

from knora.domain.knowledge import Knowledge
from knora.domain.search import SearchResult
from knora.ports.blobs import BlobStore
from knora.ports.store import Repositories
from knora.ports.tool import ToolContext, ToolDeps, ToolResult
from knora.settings import Settings

T = TypeVar("T")


class ToolUnavailable(RuntimeError):
    """A tool ran without a dependency its ``make`` should have required (a wiring mistake, not bad input)."""


def need(value: T | None, what: str) -> T:
    """``value``, which the tool's factory checked is there; a clear error instead of an AttributeError."""
    if value is None:
        raise ToolUnavailable(f"{what} is not available to this tool")
    return value


class BaseTool:
    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    parameters: ClassVar[dict[str, Any]] = {"type": "object", "properties": {}}
    timeout_seconds: float | None = None

    def __init__(self, deps: ToolDeps) -> None:
        self.deps = deps

    @property
    def repos(self) -> Repositories:
        return need(self.deps.repos, "the document store")

    @property
    def blobs(self) -> BlobStore:
        return need(self.deps.blobs, "the file store")

    @property
    def settings(self) -> Settings:
        return need(self.deps.settings, "the settings")

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:  # pragma: no cover
        raise NotImplementedError


def result_row(r: SearchResult, **extra: Any) -> dict[str, Any]:
    """A knowledge row as the renderer (spec §4.7) and the references list need it."""
    row: dict[str, Any] = {"chunk_id": r.id, "knowledge_id": r.knowledge_id,
                           "knowledge_base_id": r.knowledge_base_id,
                           "knowledge_title": r.knowledge_title, "chunk_index": r.chunk_index,
                           "chunk_type": r.chunk_type, "content": r.content, "score": round(r.score, 4),
                           "chunk_metadata": dict(r.chunk_metadata or {}),
                           "reference": r.model_dump(mode="json")}
    row.update(extra)
    return row


async def scope_knowledge(deps: ToolDeps, ctx: ToolContext, limit: int = 2000) -> list[Knowledge]:
    """Documents of the turn's scope: pinned documents, else every document of the scoped KBs (capped)."""
    repos = need(deps.repos, "the document store")
    docs: list[Knowledge] = []
    for kid in ctx.knowledge_ids:
        k = await repos.knowledge.get(ctx.tenant_id, kid)
        if k is not None:
            docs.append(k)
    pinned_kbs = {d.knowledge_base_id for d in docs}
    for kb_id in ctx.knowledge_base_ids:
        if kb_id in pinned_kbs:
            continue
        page = 1
        while len(docs) < limit:
            got = await repos.knowledge.list(ctx.tenant_id, kb_id, page=page, page_size=200)
            docs.extend(got.items)
            if len(got.items) < 200:
                break
            page += 1
    return docs[:limit]


def in_scope(ctx: ToolContext, knowledge: Knowledge | None) -> bool:
    if knowledge is None or knowledge.tenant_id != ctx.tenant_id:
        return False
    return knowledge.id in ctx.knowledge_ids or knowledge.knowledge_base_id in ctx.knowledge_base_ids
