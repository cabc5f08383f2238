"""The composition root: builds every adapter from Settings, in one place.

Each area of Knora contributes one ``wire(container)`` coroutine in its own ``wiring.py`` (listed in ``WIRING``,
in dependency order). A wiring function builds that area's adapters and services from ``container.settings`` and
sets them as attributes here; ``close`` hooks registered with ``on_close`` run in reverse order at shutdown.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from knora.adapters.db.engine import make_engine, make_sessionmaker, migrate
from knora.services.tenants.service import TenantService
from knora.settings import Settings

log = logging.getLogger(__name__)

# Module paths, imported in this order. Each has ``async def wire(c: Container) -> None``.
WIRING: tuple[str, ...] = (
    "knora.services.ingest.wiring",  # blobs, embedders, parsers, repositories, job queue, ingestion
    "knora.services.retrieval.wiring",  # retrieval engine, hybrid search, FAQ
    "knora.services.pipeline.wiring",  # model providers, web search, graph store, quick-answer runner
    "knora.services.streaming.wiring",  # stream log, stop signals, sessions, chat turns
    "knora.services.agent.wiring",  # tools, MCP, agents, smart-reasoning runner
)


class Container:
    """Holds the running adapters and services. Attributes other than the core ones are set by wiring modules."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.db: AsyncEngine = make_engine(settings.effective_database_url)
        self.sessions: async_sessionmaker[AsyncSession] = make_sessionmaker(self.db)
        self.tenants = TenantService(self.sessions)
        self.default_tenant_id: int = 0
        self.generated_api_key: str | None = None
        self._closers: list[Callable[[], Awaitable[None]]] = []
        self._starters: list[Callable[[], Awaitable[None]]] = []
        self._started = False

    def on_close(self, closer: Callable[[], Awaitable[None]]) -> None:
        self._closers.append(closer)

    def on_started(self, starter: Callable[[], Awaitable[None]]) -> None:
        """Run ``starter`` once every area is wired (e.g. job workers that need the retrieval engine)."""
        self._starters.append(starter)

    async def start(self, *, wiring: tuple[str, ...] | None = None) -> Container:
        if self._started:
            return self
        self.settings.data_dir.mkdir(parents=True, exist_ok=True)
        await migrate(self.db)
        self.default_tenant_id, self.generated_api_key = await self.tenants.ensure_default(self.settings.api_key)
        for module_path in wiring if wiring is not None else WIRING:
            try:
                module = importlib.import_module(module_path)
            except ModuleNotFoundError as exc:
                if exc.name == module_path:
                    log.debug("wiring module %s not present", module_path)
                    continue
                raise
            await module.wire(self)
        self._started = True
        for starter in self._starters:
            await starter()
        return self

    async def close(self) -> None:
        while self._closers:
            closer = self._closers.pop()
            try:
                await closer()
            except Exception:
                log.exception("error while closing")
        await self.db.dispose()
        self._started = False

    def __getattr__(self, name: str) -> Any:
        # Only reached for attributes no wiring module has set: say which, instead of a bare AttributeError.
        raise AttributeError(f"Container has no {name!r}: the wiring module that provides it did not run")
