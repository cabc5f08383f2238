"""The ids a request names — models, knowledge bases, MCP services — resolved within the caller's tenant.

Row ids are global UUIDs, and a lookup by id alone found another tenant's row: tenant B created a knowledge
base naming tenant A's embedding model, and A's endpoint then received B's documents and queries with A's API
key. Every create and update checks the ids it stores here (an unknown or foreign id is a 400 "model not
found", the same answer for both so that ids of other tenants cannot be probed); the model registries check
again on use, so a row stored before this check still never serves another tenant.

Allowed to everyone: the built-in ids (the settings' chat model and embedder as ``GET /models`` lists them,
the extractive answerer, and the local reranker where a Rerank model is asked for) and ``provider:model``
specs, which name no row and are served with the operator's settings, never with a tenant's endpoint or key.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol

from knora.domain.errors import ValidationFailed
from knora.domain.models import BUILTIN_CHAT_MODEL_ID, BUILTIN_RERANK_MODEL_ID, E5_BM25_MODEL_ID, ModelConfig
from knora.services.ingest.embedders import BUILTIN_EMBEDDING_MODEL_ID

CHAT_TYPES = ("KnowledgeQA", "VLLM")
EMBEDDING_TYPES = ("Embedding",)
RERANK_TYPES = ("Rerank",)
VLM_TYPES = ("VLLM",)

BUILTIN_MODEL_IDS = frozenset({BUILTIN_CHAT_MODEL_ID, BUILTIN_EMBEDDING_MODEL_ID, "extractive",
                               "local:extractive"})
# the type ``GET /models`` gives each built-in id: one is not accepted in another's role
_BUILTIN_TYPES = {BUILTIN_CHAT_MODEL_ID: "KnowledgeQA", "extractive": "KnowledgeQA",
                  "local:extractive": "KnowledgeQA", BUILTIN_EMBEDDING_MODEL_ID: "Embedding",
                  BUILTIN_RERANK_MODEL_ID: "Rerank", E5_BM25_MODEL_ID: "Rerank"}
BUILTIN_RERANK_IDS = frozenset({BUILTIN_RERANK_MODEL_ID})  # allowed where a Rerank model is


class _Models(Protocol):
    async def get(self, tenant_id: int | None, model_id: str) -> ModelConfig | None: ...


class _Owned(Protocol):
    """A repository whose ``get`` answers only the tenant's own rows (knowledge bases, MCP services)."""

    async def get(self, tenant_id: int, row_id: str, /) -> object | None: ...


def is_spec(model_id: str) -> bool:
    """``provider:model``: resolved from settings, not from a tenant's row (row ids are UUIDs, no colon)."""
    return ":" in model_id


class TenantRefs:
    """Checks the ids a create/update stores; each method returns the id as it will be stored."""

    def __init__(self, models: _Models, *, kbs: _Owned | None = None, mcp_services: _Owned | None = None,
                 default_embedder: Callable[[], str] = lambda: "") -> None:
        self._models = models
        self._kbs = kbs
        self._mcp = mcp_services
        self._default_embedder = default_embedder

    async def model(self, tenant_id: int, model_id: object, *, field: str,
                    types: tuple[str, ...]) -> str:
        """``model_id`` if the tenant may use it as one of ``types``; '' stays '' (the default)."""
        if model_id is None or model_id == "":
            return ""
        if not isinstance(model_id, str):
            raise ValidationFailed(f"{field} must be a string")
        value = model_id.strip()
        builtin_type = _BUILTIN_TYPES.get(value) or ("Embedding" if value == self._default_embedder() else "")
        if builtin_type and builtin_type not in types:
            raise ValidationFailed(f"{field}: model {value} is a {builtin_type} model, "
                                   f"not {' or '.join(types)}")
        if value in BUILTIN_MODEL_IDS or value == self._default_embedder() or is_spec(value):
            return value
        if value in BUILTIN_RERANK_IDS:
            if not set(types) & set(RERANK_TYPES):
                raise ValidationFailed(f"{field}: model {value} is a Rerank model, not {' or '.join(types)}")
            return value
        row = await self._models.get(tenant_id, value)
        if row is None or row.tenant_id != tenant_id:
            raise ValidationFailed(f"{field}: model not found")
        if row.type not in types:
            raise ValidationFailed(f"{field}: model {value} is a {row.type} model, not {' or '.join(types)}")
        return value

    async def knowledge_bases(self, tenant_id: int, ids: Iterable[object], *, field: str) -> None:
        await self._owned(self._kbs, tenant_id, ids, field=field, what="knowledge base")

    async def mcp_services(self, tenant_id: int, ids: Iterable[object], *, field: str) -> None:
        await self._owned(self._mcp, tenant_id, ids, field=field, what="MCP service")

    @staticmethod
    async def _owned(repo: _Owned | None, tenant_id: int, ids: Iterable[object], *, field: str,
                     what: str) -> None:
        if repo is None:
            return
        for row_id in ids:
            if not isinstance(row_id, str):
                raise ValidationFailed(f"{field} must be a list of ids")
            if row_id and await repo.get(tenant_id, row_id) is None:
                raise ValidationFailed(f"{field}: {what} {row_id} not found")
