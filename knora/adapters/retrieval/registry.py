"""Retrieval engines by name (``settings.effective_retrieval_engine``). Factories import lazily, so the embedded
profile never imports asyncpg and vice versa."""

from __future__ import annotations

import importlib
from collections.abc import Callable

from knora.ports.retrieval import RetrievalEngine
from knora.settings import Settings

ENGINES: dict[str, str] = {
    "sqlite": "knora.adapters.retrieval.sqlite",
    "postgres": "knora.adapters.retrieval.postgres",
}


def build_engine(name: str, settings: Settings) -> RetrievalEngine:
    """A new, not yet started engine."""
    try:
        module_path = ENGINES[name]
    except KeyError:
        raise ValueError(f"unknown retrieval engine {name!r}; known: {', '.join(sorted(ENGINES))}") from None
    factory: Callable[[Settings], RetrievalEngine] = importlib.import_module(module_path).build
    return factory(settings)
