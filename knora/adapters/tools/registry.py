"""The built-in tool catalogue: name → (factory, capability it needs). Adding a tool is one file + one line.

``requires`` is what assembly (``knora/services/agent/assembly.py``) filters on, so the engine and assembly
never test tool names: ``knowledge`` needs a knowledge scope, ``web`` needs web search on, ``scope`` needs
either (plans are pointless for a bare chat), ``skills`` needs skills enabled, ``""`` nothing.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from knora.ports.tool import Tool, ToolDeps


@dataclass(frozen=True)
class ToolEntry:
    module: str
    requires: str = ""
    # added when the capability holds even if not in the allow-list (web tools, §6.6)
    default_on: bool = False
    seed: Callable[[str], dict[str, Any]] | None = None  # query → arguments of a first call made for models
    # that cannot call tools (text protocol): they start from an observation instead of an empty context

    def build(self, deps: ToolDeps) -> Tool | None:
        tool: Tool | None = importlib.import_module(f"knora.adapters.tools.{self.module}").make(deps)
        return tool


CATALOG: dict[str, ToolEntry] = {
    "thinking": ToolEntry("thinking"),
    "todo_write": ToolEntry("todo_write", "scope"),
    "knowledge_search": ToolEntry("knowledge_search", "knowledge", seed=lambda q: {"queries": [q]}),
    "grep_chunks": ToolEntry("grep_chunks", "knowledge"),
    "list_knowledge_chunks": ToolEntry("list_knowledge_chunks", "knowledge"),
    "get_document_info": ToolEntry("get_document_info", "knowledge"),
    "query_knowledge_graph": ToolEntry("query_knowledge_graph", "knowledge"),
    "database_query": ToolEntry("database_query", "knowledge"),
    "search_conversations": ToolEntry("search_conversations"),
    "data_schema": ToolEntry("data_schema", "knowledge"),
    "data_analysis": ToolEntry("data_analysis", "knowledge"),
    "web_search": ToolEntry("web_search", "web", default_on=True),
    "web_fetch": ToolEntry("web_fetch", "web", default_on=True),
    "read_skill": ToolEntry("read_skill", "skills", default_on=True),
    "execute_skill_script": ToolEntry("execute_skill_script", "skills", default_on=True),
}
