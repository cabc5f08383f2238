"""Model configurations (``/models``) and agent configurations (``/agents``)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, Field

from knora.domain.agent_settings import AgentSettings
from knora.domain.common import new_id, utcnow

# WeKnora wire names; the short names are accepted on input and mapped here.
MODEL_TYPE_ALIASES = {
    "chat": "KnowledgeQA", "knowledgeqa": "KnowledgeQA", "embedding": "Embedding", "rerank": "Rerank",
    "vlm": "VLLM", "vllm": "VLLM", "asr": "ASR",
}


# The chat model chosen by settings (or the extractive answerer), as GET /models and the built-in agents
# name it.
BUILTIN_CHAT_MODEL_ID = "builtin-chat"
# Knora's local reranker (``knora/adapters/llm/rerank_local.py``), listed so WeKnora's UI can start smart
# reasoning; used only where a request, agent or knowledge base names it.
BUILTIN_RERANK_MODEL_ID = "builtin-rerank"
E5_BM25_MODEL_ID = "local:e5-bm25"  # the local re-scoring (adapters/llm/rerank_local.py), listed by /models

# The ``created_at``/``updated_at`` of built-in models and agents. They are made from code on every request,
# so a default of "now" changed on each read, and clients that sort or cache by it saw a new record each time.
BUILTIN_CREATED_AT = datetime(2025, 1, 1, tzinfo=UTC)

# Where an Ollama model without a ``base_url`` is reached (a loopback address: a row naming Ollama without a
# URL is checked against the outbound policy as this URL).
OLLAMA_DEFAULT_URL = "http://127.0.0.1:11434"

# Where a provider is reached when a model names no ``base_url``. A provider missing here has no address of
# its own (vLLM, TEI, Xinference …): an OpenAI-compatible chat client then calls the client library's default,
# and a rerank client cannot be built at all — so a rerank row for such a provider needs a ``base_url``.
PROVIDER_DEFAULT_URLS = {
    "openai": "https://api.openai.com/v1",
    "deepseek": "https://api.deepseek.com/v1",
    "dashscope": "https://dashscope.aliyuncs.com/compatible-mode/v1",
    "qwen": "https://dashscope.aliyuncs.com/compatible-mode/v1",
    "siliconflow": "https://api.siliconflow.cn/v1",
    "moonshot": "https://api.moonshot.cn/v1",
    "zhipu": "https://open.bigmodel.cn/api/paas/v4",
    "jina": "https://api.jina.ai/v1",
    "cohere": "https://api.cohere.com/v2",
    "ollama": OLLAMA_DEFAULT_URL,
}


def canonical_model_type(value: str) -> str:
    return MODEL_TYPE_ALIASES.get(value.strip().lower(), value)


class ModelConfig(BaseModel):
    id: str = Field(default_factory=new_id)
    tenant_id: int
    name: str
    display_name: str = ""
    type: str  # KnowledgeQA | Embedding | Rerank | VLLM | ASR
    source: str = "remote"  # local | remote
    description: str = ""
    # base_url, provider, interface_type, dimension …
    parameters: dict[str, Any] = Field(default_factory=dict)
    api_key: str = ""  # never serialised
    is_default: bool = False
    is_builtin: bool = False
    status: str = "active"
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)


    def provider(self, default: str) -> str:
        """The provider a row names: ``parameters.provider``, else WeKnora's ``parameters.interface_type``,
        else ``default`` (which differs by kind: Ollama/OpenAI for chat by ``source``, Jina for rerank)."""
        params = self.parameters or {}
        named = str(params.get("provider") or params.get("interface_type") or "").strip().lower()
        return named or default

    def spec(self, default_provider: str) -> ModelSpec:
        """The one row → ``provider:model`` resolution the model registries build clients from."""
        provider = self.provider(default_provider)
        params = {**(self.parameters or {}), "provider": provider}
        params.setdefault("model_id", self.id)
        return ModelSpec(spec=f"{provider}:{self.name}", base_url=str(params.get("base_url") or "") or None,
                         api_key=self.api_key or None, params=params)


@dataclass(frozen=True)
class ModelSpec:
    """What a client is built from: ``provider:model``, the endpoint and key, and the row's parameters."""

    spec: str
    base_url: str | None
    api_key: str | None
    params: dict[str, Any]


class AgentConfig(BaseModel):
    id: str = Field(default_factory=new_id)
    tenant_id: int = 0
    name: str
    description: str = ""
    avatar: str = ""
    is_builtin: bool = False
    config: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)

    def settings(self) -> AgentSettings:
        """``config`` as typed values with the one set of defaults (the dict is what the API returns)."""
        return AgentSettings.of(self.config)

    def lent_to(self, tenant_id: int) -> bool:
        """Whether this is another tenant's agent that ``tenant_id`` uses through a share (a built-in is every
        tenant's; an agent bound to no tenant, ``0``, is no one's to lend)."""
        return not self.is_builtin and self.tenant_id not in (0, tenant_id)


class Tenant(BaseModel):
    id: int
    name: str
    description: str = ""
    retrieval_config: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)
