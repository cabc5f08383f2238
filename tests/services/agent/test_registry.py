"""The tool registry: first registration wins, sorted definitions, validation, output budget."""

from __future__ import annotations

from typing import Any

import pytest

from knora.ports.tool import ToolContext, ToolResult
from knora.services.agent.registry import ToolRegistry, cast_args, truncate_output
from tests.services.agent.helpers import FuncTool, echo_tool

pytestmark = pytest.mark.unit


class TestToolRegistry:
    def test_first_registration_wins(self) -> None:
        reg = ToolRegistry()
        first, second = echo_tool("lookup"), echo_tool("lookup")
        assert reg.register(first) is True
        assert reg.register(second) is False
        assert reg.get("lookup") is first

    def test_definitions_are_sorted_by_name(self) -> None:
        reg = ToolRegistry()
        for name in ("zeta", "alpha", "mid"):
            reg.register(echo_tool(name))
        assert [d["function"]["name"] for d in reg.definitions()] == ["alpha", "mid", "zeta"]
        assert reg.definitions()[0]["type"] == "function"

    async def test_output_is_capped_head_and_tail(self) -> None:
        async def big(_a: dict[str, Any], _c: ToolContext) -> ToolResult:
            return ToolResult(output="H" * 5000 + "T" * 5000)

        reg = ToolRegistry(max_output_chars=1200)
        reg.register(FuncTool("big", big))
        out = (await reg.execute("big", {"q": "x"}, ToolContext(tenant_id=1))).output
        assert out.startswith("H" * 700)
        assert out.endswith("T" * 300)
        assert "[output truncated: 10000 → 1000 chars, showing first 700 + last 300]" in out

    def test_truncate_keeps_short_text(self) -> None:
        assert truncate_output("short", 100) == "short"

    def test_cast_strings_to_schema_types(self) -> None:
        schema = {"properties": {"n": {"type": "integer"}, "f": {"type": "boolean"}, "x": {"type": "number"},
                                 "tags": {"type": "array", "items": {"type": "integer"}}}}
        assert cast_args({"n": "3", "f": "true", "x": "1.5", "tags": ["1", "2"], "other": "7"}, schema) == \
            {"n": 3, "f": True, "x": 1.5, "tags": [1, 2], "other": "7"}

    async def test_failures_carry_the_hint(self) -> None:
        async def fails(_a: dict[str, Any], _c: ToolContext) -> ToolResult:
            return ToolResult.fail("nope")

        reg = ToolRegistry()
        reg.register(FuncTool("f", fails))
        res = await reg.execute("f", {"q": "x"}, ToolContext(tenant_id=1))
        assert res.error == "nope\n\n[Analyze the error above and try a different approach.]"
