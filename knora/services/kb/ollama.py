"""The Ollama server WeKnora's model settings page asks about (``/initialization/ollama/*``).

Its address is the operator's: ``ollama_base_url``, else the base URL of the chat or embedding model when
that one is served by Ollama, else Ollama's default. It is reached under the operator outbound policy (the
policy of every URL from settings: private addresses allowed, link-local and cloud metadata never)."""

from __future__ import annotations

from knora.adapters.llm.ollama_api import OllamaApi
from knora.domain.models import OLLAMA_DEFAULT_URL
from knora.netguard import OPERATOR
from knora.settings import Settings


def ollama_base_url(settings: Settings) -> str:
    if settings.ollama_base_url:
        return settings.ollama_base_url
    for spec, url in ((settings.chat_model, settings.chat_base_url),
                      (settings.embedder, settings.embedder_base_url)):
        if (spec or "").startswith("ollama:") and url:
            return url
    return OLLAMA_DEFAULT_URL


def ollama_api(settings: Settings) -> OllamaApi:
    return OllamaApi(ollama_base_url(settings), OPERATOR)
