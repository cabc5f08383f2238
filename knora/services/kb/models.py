"""Model configurations (``/models``). Accepts the short type names (chat|embedding|rerank|vlm) and stores
WeKnora's (KnowledgeQA|Embedding|Rerank|VLLM). The API key is write-only.

A row's URL is the tenant's, not the operator's: it must be one the tenant outbound policy allows (public, or
allow-listed by the operator), checked when the row is saved (400) and again by the client at use — a tenant
admin must not reach the cloud metadata service or internal hosts through a model's ``base_url``."""

from __future__ import annotations

from typing import Any

from knora.domain.errors import NotFound, ValidationFailed
from knora.domain.models import (
    BUILTIN_CHAT_MODEL_ID,
    BUILTIN_CREATED_AT,
    BUILTIN_RERANK_MODEL_ID,
    E5_BM25_MODEL_ID,
    OLLAMA_DEFAULT_URL,
    PROVIDER_DEFAULT_URLS,
    ModelConfig,
    canonical_model_type,
)
from knora.netguard import PUBLIC_ONLY, AddressRefused, OutboundPolicy
from knora.ports.store import Repositories
from knora.services.ingest.embedders import BUILTIN_EMBEDDING_MODEL_ID, EmbedderRegistry, model_spec
from knora.settings import Settings

TYPES = ("KnowledgeQA", "Embedding", "Rerank", "VLLM", "ASR")


def _type(value: Any) -> str:
    t = canonical_model_type(str(value or ""))
    if t not in TYPES:
        raise ValidationFailed(f"type must be one of {', '.join(TYPES)} (or chat, embedding, rerank, vlm)")
    return t


def row_url(m: ModelConfig, operator_embedder_url: str | None = None) -> str | None:
    """The URL a row's client will call, when the row decides it: its ``base_url``, or Ollama's loopback
    default for an Ollama row without one — except an embedding row while the operator set
    ``embedder_base_url``: such a row uses the operator's URL, which is not the tenant's to be checked."""
    url = str((m.parameters or {}).get("base_url") or "").strip()
    if url:
        return url
    return OLLAMA_DEFAULT_URL if _provider(m) == "ollama" and not (
        m.type == "Embedding" and operator_embedder_url) else None


def _provider(m: ModelConfig) -> str:
    """The provider the row's client is built for, resolved as the registry that serves its type does."""
    if m.type == "Embedding":
        return model_spec(m)[0].partition(":")[0]
    if m.type == "Rerank":
        return m.provider("jina")
    return m.provider("ollama" if m.source == "local" and m.type in ("KnowledgeQA", "VLLM") else "openai")


def _needs_url(m: ModelConfig) -> str | None:
    """Why a row without ``base_url`` cannot work at all (None when it can): a rerank provider with no address
    of its own — its client cannot be built."""
    if m.type == "Rerank" and _provider(m) not in PROVIDER_DEFAULT_URLS:
        return f"rerank provider {_provider(m)!r} has no default address"
    return None


class ModelService:
    def __init__(self, repos: Repositories, embedders: EmbedderRegistry,
                 policy: OutboundPolicy = PUBLIC_ONLY, operator_embedder_url: str | None = None) -> None:
        """``policy``: the tenant outbound policy a row's URL must satisfy; ``operator_embedder_url``: the
        settings' ``embedder_base_url``, which an embedding row without its own URL uses."""
        self.repos = repos
        self.embedders = embedders
        self.policy = policy
        self.operator_embedder_url = operator_embedder_url

    async def check_url(self, m: ModelConfig) -> None:
        """400 when the row's URL is missing where its client needs one, or not allowed — at save, so a row
        that cannot work is never stored to fail at its first use. A name that does not resolve now is let
        through: it is not known to be internal, and the client checks (and pins) the address again at every
        use."""
        own = bool(str((m.parameters or {}).get("base_url") or "").strip())
        if not own and (why := _needs_url(m)):
            raise ValidationFailed(f"parameters.base_url is required: {why}")
        url = row_url(m, self.operator_embedder_url)
        if url is None:
            return
        try:
            await self.policy.check_url(url)
        except AddressRefused as exc:
            if exc.code == "dns_error":
                return
            if own:
                raise ValidationFailed(f"base_url not allowed: {exc}") from exc
            raise ValidationFailed(
                f"parameters.base_url is required: without it the {_provider(m)} {m.type} model would call "
                f"{url}, which is not allowed: {exc}") from exc

    async def load_cache(self) -> None:
        """Every tenant's embedding rows (not only the default tenant's): the registry resolves a knowledge
        base's model synchronously, and a row it has not seen would silently become the default embedder."""
        for m in await self.repos.models.list_every_tenant(type="Embedding"):
            self.embedders.remember(m)

    async def create(self, tenant_id: int, body: dict[str, Any]) -> ModelConfig:
        name = body.get("name")
        if not isinstance(name, str) or not name.strip():
            raise ValidationFailed("name is required")
        params = body.get("parameters") or {}
        if not isinstance(params, dict):
            raise ValidationFailed("parameters must be an object")
        params = dict(params)
        api_key = str(params.pop("api_key", "") or body.get("api_key") or "")
        source = str(body.get("source") or "remote")
        if source not in ("local", "remote"):
            raise ValidationFailed("source must be 'local' or 'remote'")
        m = ModelConfig(tenant_id=tenant_id, name=name.strip(),
                        display_name=str(body.get("display_name") or ""),
                        type=_type(body.get("type")), source=source,
                        description=str(body.get("description") or ""),
                        parameters=params, api_key=api_key, is_default=bool(body.get("is_default", False)))
        await self.check_url(m)
        saved = await self.repos.models.create(m)
        if saved.is_default:
            await self._clear_other_defaults(saved)
        if saved.type == "Embedding":
            self.embedders.remember(saved)
        return saved

    async def get(self, tenant_id: int, model_id: str) -> ModelConfig:
        m = await self.repos.models.get(tenant_id, model_id)
        if m is None:
            raise NotFound("Model not found")
        return m

    async def list(self, tenant_id: int) -> list[ModelConfig]:
        return list(await self.repos.models.list(tenant_id))

    async def update(self, tenant_id: int, model_id: str, body: dict[str, Any]) -> ModelConfig:
        m = await self.get(tenant_id, model_id)
        changes: dict[str, Any] = {}
        for field in ("name", "display_name", "description"):
            if field in body and body[field] is not None:
                changes[field] = str(body[field])
        if "type" in body:
            changes["type"] = _type(body["type"])
        if "source" in body:
            if body["source"] not in ("local", "remote"):
                raise ValidationFailed("source must be 'local' or 'remote'")
            changes["source"] = body["source"]
        if "is_default" in body:
            changes["is_default"] = bool(body["is_default"])
        if isinstance(body.get("parameters"), dict):
            params = {**m.parameters, **body["parameters"]}
            if "api_key" in params:
                changes["api_key"] = str(params.pop("api_key") or "")
            changes["parameters"] = params
        changed = m.model_copy(update=changes)
        await self.check_url(changed)
        saved = await self.repos.models.update(changed)
        if saved.is_default:
            await self._clear_other_defaults(saved)
        if saved.type == "Embedding":
            self.embedders.remember(saved)
        return saved

    async def set_default(self, tenant_id: int, model_id: str) -> ModelConfig | None:
        """WeKnora's ``PUT /models/:id/default``: ``model_id`` becomes the one default of its type in the
        tenant. A built-in id clears the tenant's defaults of that type (the built-in is the default again)
        and returns None; only an active row can be made the default."""
        builtin_type = BUILTIN_TYPES.get(model_id)
        if builtin_type is not None:
            for other in await self.repos.models.list(tenant_id, type=builtin_type):
                if other.is_default:
                    await self.repos.models.update(other.model_copy(update={"is_default": False}))
            return None
        m = await self.get(tenant_id, model_id)
        if m.status != "active":
            raise ValidationFailed("only active models can be set as default")
        saved = m if m.is_default else await self.repos.models.update(
            m.model_copy(update={"is_default": True}))
        await self._clear_other_defaults(saved)
        return saved

    async def _clear_other_defaults(self, m: ModelConfig) -> None:
        """At most one default per type and tenant, as WeKnora's ``ClearDefaultByType``: the newest wins."""
        for other in await self.repos.models.list(m.tenant_id, type=m.type):
            if other.id != m.id and other.is_default:
                await self.repos.models.update(other.model_copy(update={"is_default": False}))

    async def default_types(self, tenant_id: int) -> set[str]:
        """The model types for which the tenant marked a row default (the built-in is then not)."""
        rows = await self.repos.models.list(tenant_id)
        return {m.type for m in rows if m.is_default and m.status == "active"}

    async def delete(self, tenant_id: int, model_id: str) -> None:
        await self.get(tenant_id, model_id)
        await self.repos.models.delete(tenant_id, model_id)
        self.embedders.forget(model_id)


BUILTIN_TYPES = {BUILTIN_CHAT_MODEL_ID: "KnowledgeQA", BUILTIN_EMBEDDING_MODEL_ID: "Embedding",
                 BUILTIN_RERANK_MODEL_ID: "Rerank", E5_BM25_MODEL_ID: "Rerank"}


def builtin_models(settings: Settings, tenant_id: int,
                   tenant_defaults: set[str] | frozenset[str] = frozenset()) -> list[ModelConfig]:
    """The models chosen by settings, shown in ``/models`` (never stored; no key is ever exposed).

    ``tenant_defaults``: the types for which the tenant marked a row default. A built-in is the default of its
    type otherwise — what a request naming no model gets — except the built-in reranker, which is never
    applied unnamed (``knora/adapters/llm/rerank_local.py``; it is listed so the UI can start smart
    reasoning).
    """
    chat = settings.chat_model or "extractive"
    return [
        ModelConfig(id=BUILTIN_CHAT_MODEL_ID, tenant_id=tenant_id, name=chat,
                    display_name=f"Built-in: {chat}",
                    type="KnowledgeQA", source="local" if not settings.chat_model else "remote",
                    description="Chat model from Knora's settings "
                                "(extractive = local answerer that cites sentences)",
                    parameters={"provider": chat.split(":", 1)[0]}, is_builtin=True,
                    is_default="KnowledgeQA" not in tenant_defaults,
                    created_at=BUILTIN_CREATED_AT, updated_at=BUILTIN_CREATED_AT),
        ModelConfig(id=BUILTIN_EMBEDDING_MODEL_ID, tenant_id=tenant_id, name=settings.embedder,
                    display_name=f"Built-in: {settings.embedder}", type="Embedding",
                    source="local" if settings.embedder.startswith("local:") else "remote",
                    description="Embedder from Knora's settings",
                    parameters={"provider": settings.embedder.split(":")[0]},
                    is_builtin=True, is_default="Embedding" not in tenant_defaults,
                    created_at=BUILTIN_CREATED_AT, updated_at=BUILTIN_CREATED_AT),
        ModelConfig(id=BUILTIN_RERANK_MODEL_ID, tenant_id=tenant_id, name="search-order",
                    display_name="Built-in: keep the search order", type="Rerank", source="local",
                    description="Local rerank model that keeps Knora's hybrid search order: no local "
                                "re-scoring beat it (docs/retrieval.md); local:e5-bm25 is the re-scoring",
                    parameters={"provider": "local"}, is_builtin=True, is_default=False,
                    created_at=BUILTIN_CREATED_AT, updated_at=BUILTIN_CREATED_AT),
        ModelConfig(id=E5_BM25_MODEL_ID, tenant_id=tenant_id, name="e5-bm25",
                    display_name="Built-in: local e5 + BM25 re-scoring", type="Rerank", source="local",
                    description="Local re-scoring of the candidates (multilingual-e5-small cosine and BM25, "
                                "blended with the search order); used only where named: it lowered nDCG@10 "
                                "on cranfield (docs/retrieval.md)",
                    parameters={"provider": "local"}, is_builtin=True, is_default=False,
                    created_at=BUILTIN_CREATED_AT, updated_at=BUILTIN_CREATED_AT),
    ]
