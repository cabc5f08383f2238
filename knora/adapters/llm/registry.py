"""``provider:model`` → model instance, and model-config rows (the ``models`` table) → model instance.

One explicit registry per kind (``CHAT_PROVIDERS``, ``RERANK_PROVIDERS``, each a
:class:`~knora.domain.registry.Registry`): a provider is one factory function; adding one is one line.
Instances are cached per (provider, model, base URL, key) so HTTP connection pools are reused across turns.

Resolution of ``await chat_models.get(model_id, tenant_id=…)`` — the model named is the model used:
1. ``None``/empty → the tenant's ``is_default`` KnowledgeQA row → else ``builtin-chat``. A stored row that is
   not marked default never answers an unnamed request (a client adding a broken model must not break the
   other turns).
2. ``builtin-chat`` (what ``GET /models`` lists for the settings' model) → ``settings.chat_model`` → the local
   extractive answerer. Never a row.
3. a row id of the ``models`` table of ``tenant_id`` (type KnowledgeQA/VLLM; another tenant's row is never
   used, and without a tenant no row is) → its ``parameters.provider`` (or
   ``interface_type``; ``source == "local"`` means Ollama), ``parameters.base_url``, ``api_key`` and ``name``.
4. a ``provider:model`` string → that provider with the settings' base URL and key.
5. ``extractive`` / ``local:extractive`` → the extractive answerer.
Unknown ids raise ``ModelNotConfigured`` (the pipeline maps it to ``ErrGetChatModel``).

Every client connects through :class:`~knora.netguard.PinnedTransport` under one of two policies: a row's
URL (stored by a tenant through the API) under the tenant policy — public addresses plus the operator's
allow-list — and a URL from settings under the operator policy (loopback and private allowed). A row whose URL
the policy refuses (stored before the policy, or allowed then) fails with ``ModelUrlRefused`` before any
connection is tried. The policy reaches a factory as ``params[POLICY_KEY]``, set after a row's own parameters
so a row cannot choose it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any, Protocol, TypeVar

from knora.adapters.llm.deadlines import DeadlineChatModel, Deadlines
from knora.adapters.llm.extractive import EXTRACTIVE_MODEL_ID, ExtractiveAnswerer
from knora.adapters.llm.metered import MeteredChatModel
from knora.adapters.llm.ollama_chat import OllamaChatModel
from knora.adapters.llm.openai_chat import OpenAIChatModel
from knora.adapters.llm.rerank_http import HttpReranker, Style
from knora.adapters.llm.rerank_local import e5_bm25, search_order
from knora.domain.models import (
    BUILTIN_CHAT_MODEL_ID,
    BUILTIN_RERANK_MODEL_ID,
    E5_BM25_MODEL_ID,
    PROVIDER_DEFAULT_URLS,
    ModelConfig,
)
from knora.domain.registry import Registry
from knora.netguard import PUBLIC_ONLY, AddressRefused, Outbound, OutboundPolicy
from knora.ports.chat import ChatModel, ModelError
from knora.ports.reranker import Reranker
from knora.ports.telemetry import Metrics
from knora.settings import Settings

log = logging.getLogger(__name__)

F = TypeVar("F")  # a provider factory


class ModelNotConfigured(ModelError):
    """The requested model id resolves to nothing usable."""


class ModelUrlRefused(ModelNotConfigured):
    """A model row's URL points where the outbound policy does not allow (e.g. loopback, 169.254.169.254)."""


POLICY_KEY = "outbound_policy"


def _policy(params: dict[str, Any]) -> OutboundPolicy:
    """The policy a factory connects under; public-only when a caller built params without one."""
    policy = params.get(POLICY_KEY)
    return policy if isinstance(policy, OutboundPolicy) else PUBLIC_ONLY


def row_url(row: ModelConfig, default_provider: str) -> str | None:
    """The URL a model row's client will call (its ``base_url`` or its provider's default), or None for the
    client library's own default (api.openai.com)."""
    m = row.spec(default_provider)
    return m.base_url or DEFAULT_BASE_URLS.get(m.spec.partition(":")[0])


async def check_row_url(row: ModelConfig, default_provider: str, policy: OutboundPolicy) -> None:
    """Refuse a row whose URL the policy does not allow before any client connects (a row stored before the
    policy, or allowed by an allow-list since shortened), with a reason instead of a connection error."""
    url = row_url(row, default_provider)
    if url is None:
        return
    try:
        await policy.check_url(url)
    except AddressRefused as exc:
        if exc.code == "dns_error":  # not known to be internal; the pinned transport resolves at connect
            return
        raise ModelUrlRefused(f"model {row.name!r} ({row.id}) cannot be used: {exc}") from exc


class _ModelRows(Protocol):
    async def get(self, tenant_id: int | None, model_id: str) -> ModelConfig | None: ...

    async def list(self, tenant_id: int, *, type: str | None = None) -> list[ModelConfig]: ...


ChatFactory = Callable[[str, str | None, str | None, dict[str, Any]], ChatModel]
RerankFactory = Callable[[str, str | None, str | None, dict[str, Any]], Reranker]

DEFAULT_BASE_URLS = PROVIDER_DEFAULT_URLS


def _openai(model: str, base_url: str | None, api_key: str | None, params: dict[str, Any]) -> ChatModel:
    provider = str(params.get("provider") or "openai")
    return OpenAIChatModel(model, base_url=base_url or DEFAULT_BASE_URLS.get(provider), api_key=api_key,
                           model_id=params.get("model_id") or f"{provider}:{model}",
                           timeout=float(params.get("timeout", 120.0)),
                           max_retries=int(params.get("max_retries", 2)),
                           supports_tools=bool(params.get("supports_tools", True)),
                           thinking_param=params.get("thinking_param"),
                           include_usage=bool(params.get("include_usage", True)),
                           transport=_policy(params).transport2())


def _ollama(model: str, base_url: str | None, api_key: str | None, params: dict[str, Any]) -> ChatModel:
    return OllamaChatModel(model, base_url=base_url, model_id=params.get("model_id") or f"ollama:{model}",
                           timeout=float(params.get("timeout", 300.0)),
                           supports_tools=bool(params.get("supports_tools", True)),
                           transport=_policy(params).transport())


def _extractive(model: str, base_url: str | None, api_key: str | None, params: dict[str, Any]) -> ChatModel:
    return ExtractiveAnswerer()


CHAT_PROVIDERS: Registry[ChatFactory] = Registry("chat provider", {
    **dict.fromkeys(("openai", "openai-compatible", "openai_compatible", "vllm", "deepseek", "qwen",
                     "dashscope", "xinference", "lmstudio", "siliconflow", "moonshot", "zhipu", "generic",
                     "remote", "fake"), _openai),
    "ollama": _ollama, "extractive": _extractive, "local": _extractive,
})


def _http_rerank(model: str, base_url: str | None, api_key: str | None, params: dict[str, Any]) -> Reranker:
    provider = str(params.get("provider") or "jina")
    url = base_url or DEFAULT_BASE_URLS.get(provider)
    if not url:
        raise ModelNotConfigured(f"rerank model {model!r} has no base_url")
    style: Style = "tei" if provider == "tei" else ("cohere" if provider == "cohere" else "jina")
    return HttpReranker(model, base_url=url, api_key=api_key, style=style,
                        model_id=params.get("model_id") or f"{provider}:{model}",
                        transport=_policy(params).transport())


RERANK_PROVIDERS: Registry[RerankFactory] = Registry("rerank provider", dict.fromkeys(
    ("jina", "cohere", "tei", "openai", "openai-compatible", "openai_compatible", "vllm", "siliconflow",
     "xinference", "dashscope", "qwen", "remote", "generic", "fake"), _http_rerank))


def _registry(kind: str, providers: Mapping[str, F] | Registry[F] | None,
              default: Registry[F]) -> Registry[F]:
    """The providers a model registry dispatches on: the default, or a caller's table (tests inject fakes)."""
    if providers is None:
        return default
    return providers if isinstance(providers, Registry) else Registry(kind, providers)


def split_spec(spec: str) -> tuple[str, str]:
    """``"ollama:qwen2.5:7b"`` → ``("ollama", "qwen2.5:7b")``; a bare name means OpenAI-compatible."""
    provider, sep, model = spec.partition(":")
    return (provider.strip().lower(), model.strip()) if sep else ("openai", spec.strip())


class _Cache:
    def __init__(self) -> None:
        self._items: dict[tuple[str, ...], Any] = {}

    def get_or_make(self, key: tuple[str, ...], make: Callable[[], Any]) -> Any:
        if key not in self._items:
            self._items[key] = make()
        return self._items[key]

    async def close(self) -> None:
        for item in self._items.values():
            closer = getattr(item, "close", None)
            if closer is not None:
                try:
                    await closer()
                except Exception:
                    log.exception("closing model client failed")
        self._items.clear()


def _outbound(settings: Settings, outbound: Outbound | None) -> Outbound:
    return outbound or Outbound.from_settings(settings.effective_outbound_allowed_hosts,
                                              settings.outbound_allow_private)


class ChatModelRegistry:
    def __init__(self, settings: Settings, rows: _ModelRows | None = None,
                 providers: Mapping[str, ChatFactory] | Registry[ChatFactory] | None = None,
                 outbound: Outbound | None = None, metrics: Metrics | None = None) -> None:
        self._settings = settings
        self._rows = rows
        self._outbound = _outbound(settings, outbound)
        self._metrics = metrics
        self._providers: Registry[ChatFactory] = _registry("chat provider", providers, CHAT_PROVIDERS)
        self._cache = _Cache()

    def from_spec(self, spec: str, *, base_url: str | None = None, api_key: str | None = None,
                  params: dict[str, Any] | None = None, policy: OutboundPolicy | None = None) -> ChatModel:
        """``policy``: the operator's unless given (a spec with the settings' URL is the operator's)."""
        provider, model = split_spec(spec)
        if spec.strip().lower() in ("extractive", EXTRACTIVE_MODEL_ID):
            provider, model = "extractive", "extractive"
        if provider not in self._providers:
            raise ModelNotConfigured(f"unknown chat provider {provider!r} in {spec!r}")
        factory = self._providers.get(provider)
        policy = policy or self._outbound.operator
        merged = {"provider": provider, **(params or {}), POLICY_KEY: policy}
        key = (provider, model, base_url or "", api_key or "", policy.name)
        made: ChatModel = self._cache.get_or_make(key, lambda: self._bounded(factory(model, base_url, api_key,
                                                                                   merged)))
        return made

    def _bounded(self, model: ChatModel) -> ChatModel:
        """Every model but the in-process extractive answerer waits under the first-token and stall deadlines
        and is metered (here, once, so both runtimes and every provider get them)."""
        deadlines = Deadlines(self._settings.model_first_token_seconds, self._settings.model_stall_seconds)
        if isinstance(model, ExtractiveAnswerer):
            return model
        bounded = DeadlineChatModel(model, deadlines) if deadlines.active else model
        return MeteredChatModel(bounded, self._metrics) if self._metrics is not None else bounded

    def from_row(self, row: ModelConfig) -> ChatModel:
        """A row's client, under the tenant policy (callers check the URL first: :meth:`_from_row`)."""
        m = row.spec(_chat_default(row))
        return self.from_spec(m.spec, base_url=m.base_url, api_key=m.api_key, params=m.params,
                              policy=self._outbound.tenant)

    async def _from_row(self, row: ModelConfig) -> ChatModel:
        await check_row_url(row, _chat_default(row), self._outbound.tenant)
        return self.from_row(row)

    @property
    def extractive(self) -> ChatModel:
        return self.from_spec("extractive")

    @property
    def builtin(self) -> ChatModel:
        """``builtin-chat``: the settings' chat model, else the local extractive answerer — never a row."""
        s = self._settings
        if s.chat_model:
            return self.from_spec(s.chat_model, base_url=s.chat_base_url, api_key=s.chat_api_key)
        return self.extractive

    async def default_row(self, tenant_id: int | None) -> ModelConfig | None:
        """The tenant's ``is_default`` KnowledgeQA row (active), or None: then ``builtin-chat`` is the
        default. A row that is not marked default is never chosen for a request that names no model."""
        if self._rows is None or tenant_id is None:
            return None
        rows = [r for r in await self._rows.list(tenant_id, type="KnowledgeQA")
                if r.is_default and r.status == "active"]
        return max(rows, key=lambda r: r.updated_at) if rows else None  # the latest marked, if several

    async def get(self, model_id: str | None = None, *, tenant_id: int | None = None) -> ChatModel:
        if not model_id:
            row = await self.default_row(tenant_id)
            return await self._from_row(row) if row is not None else self.builtin
        if model_id == BUILTIN_CHAT_MODEL_ID:
            return self.builtin
        if model_id.strip().lower() in ("extractive", EXTRACTIVE_MODEL_ID):
            return self.extractive
        if self._rows is not None and tenant_id is not None:  # a row only ever for its own tenant
            row = await self._rows.get(tenant_id, model_id)
            if row is not None:
                if row.type not in ("KnowledgeQA", "VLLM"):
                    raise ModelNotConfigured(f"model {model_id} is a {row.type} model, not a chat model")
                return await self._from_row(row)
        if ":" in model_id:
            s = self._settings
            return self.from_spec(model_id, base_url=s.chat_base_url, api_key=s.chat_api_key)
        raise ModelNotConfigured(f"configured chat model {model_id} is unavailable")

    async def close(self) -> None:
        await self._cache.close()


def _chat_default(row: ModelConfig) -> str:
    return "ollama" if row.source == "local" else "openai"


class RerankerRegistry:
    def __init__(self, settings: Settings, rows: _ModelRows | None = None,
                 providers: Mapping[str, RerankFactory] | Registry[RerankFactory] | None = None,
                 outbound: Outbound | None = None) -> None:
        self._settings = settings
        self._rows = rows
        self._outbound = _outbound(settings, outbound)
        self._providers: Registry[RerankFactory] = _registry("rerank provider", providers, RERANK_PROVIDERS)
        self._cache = _Cache()

    def from_spec(self, spec: str, *, base_url: str | None = None, api_key: str | None = None,
                  params: dict[str, Any] | None = None, policy: OutboundPolicy | None = None) -> Reranker:
        provider, model = split_spec(spec)
        if ":" not in spec:
            provider = "jina"
        if provider not in self._providers:
            raise ModelNotConfigured(f"unknown rerank provider {provider!r} in {spec!r}")
        factory = self._providers.get(provider)
        policy = policy or self._outbound.operator
        merged = {"provider": provider, **(params or {}), POLICY_KEY: policy}
        key = (provider, model, base_url or "", api_key or "", policy.name)
        made_r: Reranker = self._cache.get_or_make(key, lambda: factory(model, base_url, api_key, merged))
        return made_r

    @property
    def builtin(self) -> Reranker:
        """``builtin-rerank`` as ``GET /models`` lists it: the search order kept (``rerank_local``)."""
        made: Reranker = self._cache.get_or_make(("builtin", BUILTIN_RERANK_MODEL_ID), search_order)
        return made

    async def get(self, model_id: str | None = None, *, tenant_id: int | None = None) -> Reranker | None:
        """``None`` when nothing is named and the operator set no ``rerank_model``: reranking is then
        skipped (spec §2.9). The built-in local reranker is used only where it is named (it is not a default:
        see ``rerank_local``); a tenant's ``is_default`` Rerank row is not applied unnamed either, because
        WeKnora's pipeline reranks only with the model its agent or knowledge base names."""
        s = self._settings
        if not model_id:
            if s.rerank_model:
                return self.from_spec(s.rerank_model, base_url=s.rerank_base_url, api_key=s.rerank_api_key)
            return None
        if model_id == BUILTIN_RERANK_MODEL_ID:
            return self.builtin
        if model_id == E5_BM25_MODEL_ID:  # the local re-scoring (rerank_local), by name only
            made: Reranker = self._cache.get_or_make(("builtin", E5_BM25_MODEL_ID), e5_bm25)
            return made
        if self._rows is not None and tenant_id is not None:  # a row only ever for its own tenant
            row = await self._rows.get(tenant_id, model_id)
            if row is not None:
                if row.type != "Rerank":
                    raise ModelNotConfigured(f"model {model_id} is a {row.type} model, not a rerank model")
                await check_row_url(row, "jina", self._outbound.tenant)
                m = row.spec("jina")
                return self.from_spec(m.spec, base_url=m.base_url, api_key=m.api_key, params=m.params,
                                      policy=self._outbound.tenant)
        if ":" in model_id:
            return self.from_spec(model_id, base_url=s.rerank_base_url, api_key=s.rerank_api_key)
        raise ModelNotConfigured(f"rerank model {model_id} is unavailable")

    async def close(self) -> None:
        await self._cache.close()
