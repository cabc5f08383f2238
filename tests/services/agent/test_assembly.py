"""Tool assembly: the allow-list decides, capabilities filter, nothing unchosen is added (spec §6.6)."""

from __future__ import annotations

import pytest

from knora.adapters.tools.registry import CATALOG
from knora.ports.tool import ToolDeps
from knora.services.agent.assembly import Capabilities, build_registry, select_tools
from knora.services.agent.config import DEFAULT_ALLOWED_TOOLS

pytestmark = pytest.mark.unit


class TestSelect:
    def test_no_knowledge_scope_removes_kb_and_data_tools(self) -> None:
        assert select_tools([], Capabilities(), CATALOG) == ["thinking", "search_conversations"]

    def test_empty_allow_list_means_defaults(self) -> None:
        names = select_tools([], Capabilities(knowledge=True), CATALOG)
        assert names == [n for n in DEFAULT_ALLOWED_TOOLS if n in CATALOG]

    def test_web_tools_only_when_web_is_on(self) -> None:
        chosen = ["knowledge_search", "web_search"]
        assert select_tools(chosen, Capabilities(knowledge=True), CATALOG) == ["knowledge_search"]
        assert select_tools(chosen, Capabilities(knowledge=True, web=True), CATALOG) == \
            ["knowledge_search", "web_search", "web_fetch"]

    def test_tools_the_user_did_not_choose_are_never_added(self) -> None:
        names = select_tools(["grep_chunks"], Capabilities(knowledge=True), CATALOG)
        assert names == ["grep_chunks"]

    def test_unknown_names_skipped_and_duplicates_collapsed(self) -> None:
        assert select_tools(["grep_chunks", "no_such", "grep_chunks"], Capabilities(knowledge=True),
                            CATALOG) == \
            ["grep_chunks"]

    def test_plan_tool_needs_some_scope(self) -> None:
        assert select_tools(["todo_write"], Capabilities(), CATALOG) == []
        assert select_tools(["todo_write"], Capabilities(web=True), CATALOG)[:1] == ["todo_write"]


def test_unavailable_services_drop_their_tools() -> None:
    reg = build_registry(["thinking", "knowledge_search", "grep_chunks"], ToolDeps(), CATALOG)
    assert reg.names() == ["thinking"]  # no search service, no repositories
