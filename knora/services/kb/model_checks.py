"""The model editor's "test connection" checks and the providers it offers (WeKnora's
``/initialization/{remote,embedding,rerank}/…`` and ``GET /models/providers``).

A check builds the client a saved model row would get — the same provider registries, the tenant outbound
policy (private and loopback targets refused unless the operator allow-lists them), the URL refused before any
connection — makes one small call (a two-word chat, one embedding, one rerank of two passages) under
``CHECK_TIMEOUT_SECONDS``, and closes the client. It never raises for a model that fails: the answer is
``available: false`` with a message saying what went wrong, as WeKnora's UI expects.

The client is built for the check and not cached: a registry's cache is keyed by URL and key, and every typo
in the editor would otherwise stay in it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from knora.adapters.embedders.registry import build_embedder
from knora.adapters.llm.registry import (
    CHAT_PROVIDERS,
    POLICY_KEY,
    RERANK_PROVIDERS,
    ModelNotConfigured,
    check_row_url,
    split_spec,
)
from knora.domain.models import PROVIDER_DEFAULT_URLS, ModelConfig
from knora.netguard import Outbound
from knora.ports.chat import ChatMessage, ChatModel, ChatOptions
from knora.ports.store import ModelRepo
from knora.services.ingest.embedders import model_spec
from knora.settings import Settings

log = logging.getLogger(__name__)

CHECK_TIMEOUT_SECONDS = 20.0
T = TypeVar("T")


@dataclass(frozen=True)
class CheckTarget:
    """What the editor sends: a model not (necessarily) saved yet."""

    name: str
    base_url: str = ""
    api_key: str = ""
    provider: str = ""
    source: str = "remote"
    dimension: int | None = None
    model_id: str = ""  # an existing row whose stored key fills an empty ``api_key``


@dataclass(frozen=True)
class CheckResult:
    available: bool
    message: str
    dimension: int | None = None


@dataclass(frozen=True)
class Provider:
    """One entry of ``GET /models/providers``: WeKnora's front-end type names (chat, embedding, rerank)."""

    value: str
    label: str
    description: str
    default_urls: dict[str, str]
    model_types: tuple[str, ...]


def _label(name: str) -> str:
    special = {"openai": "OpenAI", "deepseek": "DeepSeek", "dashscope": "Aliyun DashScope",
               "qwen": "Qwen (DashScope)", "siliconflow": "SiliconFlow", "moonshot": "Moonshot",
               "zhipu": "Zhipu AI", "jina": "Jina", "cohere": "Cohere", "ollama": "Ollama", "vllm": "vLLM",
               "tei": "Text Embeddings Inference", "xinference": "Xinference", "lmstudio": "LM Studio",
               "generic": "OpenAI-compatible (generic)"}
    return special.get(name, name)


# Provider names that are aliases or test doubles, not choices for a user.
_HIDDEN = frozenset({"openai-compatible", "openai_compatible", "remote", "fake", "extractive", "local"})
# Providers the rerank registry accepts whose service has no rerank API of the Jina/Cohere/TEI kind.
_NO_RERANK_API = frozenset({"openai", "deepseek", "moonshot", "zhipu"})
# HTTP embedding providers: the embedder registry has "openai" (any OpenAI-compatible server) and "ollama".
_EMBEDDING = frozenset({"openai", "ollama", "deepseek", "dashscope", "qwen", "siliconflow", "zhipu", "jina",
                        "vllm", "xinference", "generic", "lmstudio"})


def providers(model_type: str = "") -> list[Provider]:
    """Every provider Knora's chat, embedding and rerank registries take, with its default URL (none: the
    user gives one) per model type it serves; ``model_type`` (chat, embedding, rerank) keeps those serving
    it."""
    names = (set(CHAT_PROVIDERS.names()) | set(RERANK_PROVIDERS.names())) - _HIDDEN
    out: list[Provider] = []
    for name in sorted(names):
        types: list[str] = []
        if name in CHAT_PROVIDERS:
            types.append("chat")
        if name in _EMBEDDING:
            types.append("embedding")
        if name in RERANK_PROVIDERS and name not in _NO_RERANK_API:
            types.append("rerank")
        if model_type and model_type not in types:
            continue
        url = PROVIDER_DEFAULT_URLS.get(name, "")
        # A provider's default address serves its chat and embedding APIs; only Jina's and Cohere's also
        # serve the rerank API Knora's rerank client speaks.
        urls = {t: url for t in types if url and (t != "rerank" or name in ("jina", "cohere"))}
        out.append(Provider(name, _label(name), _describe(name, tuple(types)), urls, tuple(types)))
    return out


def _describe(name: str, types: tuple[str, ...]) -> str:
    via = "Ollama's own API" if name == "ollama" else (
        "the rerank API" if types == ("rerank",) else "an OpenAI-compatible API")
    return f"{_label(name)} through {via}"


MODEL_TYPES = ("chat", "embedding", "rerank")


async def _close(client: object) -> None:
    for name in ("aclose", "close"):
        closer: Callable[[], Awaitable[None]] | None = getattr(client, name, None)
        if closer is not None:
            try:
                await closer()
            except Exception:  # a failed close must not turn a check's answer into an error
                log.debug("closing a checked model client failed", exc_info=True)
            return


def _reason(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return f"no answer within {CHECK_TIMEOUT_SECONDS:.0f} s"
    text = str(exc).strip() or type(exc).__name__
    return text[:500]


class ModelChecks:
    def __init__(self, settings: Settings, rows: ModelRepo) -> None:
        self._settings = settings
        self._rows = rows
        self._outbound = Outbound.from_settings(settings.effective_outbound_allowed_hosts,
                                                settings.outbound_allow_private)

    async def _row(self, tenant_id: int, target: CheckTarget, type_: str) -> ModelConfig:
        key = target.api_key
        if not key and target.model_id:  # the editor never sees a stored key; it names the row instead
            stored = await self._rows.get(tenant_id, target.model_id)
            key = stored.api_key if stored is not None else ""
        params: dict[str, Any] = {}
        if target.base_url:
            params["base_url"] = target.base_url
        if target.provider:
            params["provider"] = target.provider.strip().lower()
        if target.dimension:
            params["dimension"] = target.dimension
        return ModelConfig(tenant_id=tenant_id, name=target.name, type=type_,
                           source=target.source or "remote", parameters=params, api_key=key)

    async def _run(self, call: Callable[[], Awaitable[T]]) -> T:
        return await asyncio.wait_for(call(), CHECK_TIMEOUT_SECONDS)

    async def _chat_client(self, row: ModelConfig) -> tuple[ChatModel, str]:
        default = "ollama" if row.source == "local" else "openai"
        await check_row_url(row, default, self._outbound.tenant)
        m = row.spec(default)
        provider, model = split_spec(m.spec)
        if provider not in CHAT_PROVIDERS.names():
            raise ModelNotConfigured(f"unknown chat provider {provider!r}")
        client: ChatModel = CHAT_PROVIDERS.get(provider)(model, m.base_url, m.api_key, {
            **m.params, "max_retries": 0, "timeout": CHECK_TIMEOUT_SECONDS,
            POLICY_KEY: self._outbound.tenant})
        return client, model

    async def vision(self, tenant_id: int, target: CheckTarget, image: bytes, mime: str) -> CheckResult:
        """WeKnora's multimodal test: the VLM captions ``image`` as it would a document's image."""
        from knora.services.ingest.captions import CAPTION_PROMPT, data_url

        try:
            client, model = await self._chat_client(await self._row(tenant_id, target, "VLLM"))
        except Exception as exc:  # a setting no client can be built from: the reason, not a 500
            return CheckResult(False, _reason(exc))
        try:
            answer = await self._run(lambda: client.chat(
                [ChatMessage(role="user", content=CAPTION_PROMPT, images=[data_url(image, mime)])],
                ChatOptions(max_tokens=400, temperature=0.1)))
        except Exception as exc:
            return CheckResult(False, f"The model did not describe the image: {_reason(exc)}")
        finally:
            await _close(client)
        caption = answer.content.strip()
        if not caption:
            return CheckResult(False, f"{model} answered nothing for the image")
        return CheckResult(True, caption)

    async def chat(self, tenant_id: int, target: CheckTarget) -> CheckResult:
        row = await self._row(tenant_id, target, "KnowledgeQA")
        try:
            client, model = await self._chat_client(row)
        except Exception as exc:  # a setting no client can be built from: the reason, not a 500
            return CheckResult(False, _reason(exc))
        try:
            answer = await self._run(lambda: client.chat([ChatMessage(role="user", content="Say OK.")],
                                                         ChatOptions(max_tokens=8)))
        except Exception as exc:
            return CheckResult(False, f"The model did not answer: {_reason(exc)}")
        finally:
            await _close(client)
        return CheckResult(True, f"Connected: {model} answered ({len(answer.content)} characters)")

    async def embedding(self, tenant_id: int, target: CheckTarget) -> CheckResult:
        row = await self._row(tenant_id, target, "Embedding")
        try:
            spec, overrides = model_spec(row)
            if row.parameters.get("base_url"):
                await self._outbound.tenant.check_url(str(row.parameters["base_url"]))
            settings = self._settings.model_copy(update=overrides)
            embedder = build_embedder(spec, settings, self._outbound.tenant)
        except Exception as exc:  # a setting no client can be built from: the reason, not a 500
            return CheckResult(False, _reason(exc))
        try:
            vector = await self._run(lambda: embedder.embed_query("Knora connection test"))
        except Exception as exc:
            return CheckResult(False, f"The model did not embed: {_reason(exc)}")
        finally:
            await _close(embedder)
        dim = int(len(vector))
        return CheckResult(True, f"Connected: {dim}-dimensional vectors", dimension=dim)

    async def rerank(self, tenant_id: int, target: CheckTarget) -> CheckResult:
        row = await self._row(tenant_id, target, "Rerank")
        try:
            await check_row_url(row, "jina", self._outbound.tenant)
            m = row.spec("jina")
            provider, model = split_spec(m.spec)
            if provider not in RERANK_PROVIDERS.names():
                raise ModelNotConfigured(f"unknown rerank provider {provider!r}")
            client = RERANK_PROVIDERS.get(provider)(model, m.base_url, m.api_key,
                                                    {**m.params, POLICY_KEY: self._outbound.tenant})
        except Exception as exc:  # a setting no client can be built from: the reason, not a 500
            return CheckResult(False, _reason(exc))
        try:
            scores = await self._run(lambda: client.rerank("What is Knora?", [
                "Knora answers questions over knowledge bases.", "Bananas are yellow."]))
        except Exception as exc:
            return CheckResult(False, f"The model did not rerank: {_reason(exc)}")
        finally:
            await _close(client)
        if not scores:
            return CheckResult(False, "The model answered with no scores")
        return CheckResult(True, f"Connected: {len(scores)} passages scored")
