"""Retrieval engines by name (``settings.effective_retrieval_engine``). Entries are import strings, so the
embedded profile never imports asyncpg and vice versa, and settings can check a name without importing either.
"""

from __future__ import annotations

from collections.abc import Callable

from knora.domain.registry import Registry
from knora.ports.retrieval import RetrievalEngine
from knora.settings import Settings

EngineFactory = Callable[[Settings], RetrievalEngine]

ENGINES: Registry[EngineFactory] = Registry("retrieval engine", {
    "sqlite": "knora.adapters.retrieval.sqlite:build",
    "postgres": "knora.adapters.retrieval.postgres:build",
})


def build_engine(name: str, settings: Settings) -> RetrievalEngine:
    """A new, not yet started engine; ValueError (listing the known names) for an unknown one."""
    return ENGINES.get(name)(settings)
