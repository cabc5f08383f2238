"""Which tools a run gets (spec §6.6, seed 000 "按配置装配"): the allow-list, then capability filtering,
then MCP.

Never adds a tool the user did not choose — except what a switch the user turned on implies (web search on →
web tools; skills on → skill tools), as WeKnora does. Capabilities come from the catalogue's ``requires``
field, so nothing here tests a tool's name.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from knora.ports.tool import Tool, ToolDeps
from knora.services.agent.config import DEFAULT_ALLOWED_TOOLS
from knora.services.agent.registry import ToolRegistry

log = logging.getLogger(__name__)


class CatalogEntry(Protocol):
    """One built-in tool as the catalogue (``knora/adapters/tools/registry.py``, injected by the root) knows
    it."""

    @property
    def requires(self) -> str: ...

    @property
    def default_on(self) -> bool: ...

    @property
    def seed(self) -> Callable[[str], dict[str, Any]] | None: ...

    def build(self, deps: ToolDeps) -> Tool | None: ...


Catalog = Mapping[str, CatalogEntry]


@dataclass
class Capabilities:
    knowledge: bool = False  # the turn has a knowledge scope (KBs or pinned documents)
    web: bool = False  # web search on for this turn (agent switch AND request switch) and a provider exists
    skills: bool = False
    extra: set[str] = field(default_factory=set)

    def allows(self, requires: str) -> bool:
        if not requires:
            return True
        if requires == "scope":
            return self.knowledge or self.web
        return bool(getattr(self, requires, False)) or requires in self.extra


def select_tools(allowed: list[str] | None, caps: Capabilities, catalog: Catalog) -> list[str]:
    names = list(allowed) if allowed else list(DEFAULT_ALLOWED_TOOLS)
    names += [n for n, e in catalog.items() if e.default_on and caps.allows(e.requires) and e.requires]
    out: list[str] = []
    for name in names:
        entry = catalog.get(name)
        if entry is None:
            log.info("unknown tool %r in allow-list skipped", name)
            continue
        if caps.allows(entry.requires) and name not in out:
            out.append(name)
    return out


def build_registry(names: list[str], deps: ToolDeps, catalog: Catalog, *, max_output_chars: int = 24000,
                   tool_timeout: float = 60.0) -> ToolRegistry:
    registry = ToolRegistry(max_output_chars=max_output_chars, default_timeout=tool_timeout)
    for name in names:
        tool = catalog[name].build(deps)
        if tool is None:
            log.info("tool %s unavailable (its service is not configured)", name)
            continue
        registry.register(tool)
    return registry
