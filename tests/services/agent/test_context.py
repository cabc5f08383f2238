"""Context-window management (spec §6.5) and message sanitising (§6.4.1)."""

from __future__ import annotations

import pytest

from knora.ports.chat import ChatMessage, ToolCall
from knora.services.agent import context
from tests.fakes.function_model import script

M = ChatMessage


class TestSanitize:
    pytestmark = pytest.mark.unit

    def test_drops_empty_merges_and_rescues_orphans(self) -> None:
        out = context.sanitize([M(role="system", content="s"), M(role="user", content="a"), M(role="user",
                                                                                              content="b"),
                                M(role="assistant", content=""), M(role="tool", content="r",
                                                                   tool_call_id="zz",
                                                                   name="t")])
        assert [(m.role, m.content) for m in out] == [("system", "s"), ("user", "a\n\nb"),
                                                      ("system", "[Tool result for t]: r")]

    def test_keeps_declared_tool_results(self) -> None:
        msgs = [M(role="user", content="q"), M(role="assistant", tool_calls=[ToolCall(id="1", name="t")]),
                M(role="tool", content="r", tool_call_id="1", name="t")]
        assert context.sanitize(msgs) == msgs


class TestBudgets:
    pytestmark = pytest.mark.unit

    def test_tool_budget_is_clamped(self) -> None:
        assert context.tool_budget(200_000) == 32768
        assert context.tool_budget(1000) == 8192

    def test_current_turn_tool_results_newest_first(self) -> None:
        big = "x" * 40000  # ~10k tokens each; budget 8192 tokens
        msgs = [M(role="system", content="s"), M(role="user", content="q"),
                M(role="assistant", tool_calls=[ToolCall(id="1", name="t"), ToolCall(id="2", name="t")]),
                M(role="tool", content=big, tool_call_id="1"), M(role="tool", content="new " + big,
                                                                 tool_call_id="2")]
        out = context.trim_current_turn_tool_results(msgs, 10_000)
        assert out[3].content.startswith("[Tool result compacted: original_bytes=40000.")
        assert out[4].content.startswith("new ")
        assert context.PREVIEW_SEPARATOR in out[4].content
        assert msgs[4].content == "new " + big  # the original is untouched
        assert context.estimate_text(out[3].content) + context.estimate_text(out[4].content) <= 8192

    def test_compress_drops_oldest_groups_only(self) -> None:
        old = [M(role="user", content="old " * 2000), M(role="assistant", content="old answer " * 2000)]
        tail = [M(role="user", content="current question")]
        msgs = [M(role="system", content="sys"), *old, M(role="user", content="recent"),
                M(role="assistant", content="recent answer"), *tail]
        out = context.compress(msgs, 5000)
        assert out[0].content == "sys"
        assert out[-1].content == "current question"
        assert all("old" not in m.content for m in out)
        assert any(m.content == "recent" for m in out)


@pytest.mark.unit
async def test_consolidation_summarises_older_history() -> None:
    model = script("SUMMARY: user asked about leave")
    msgs = [M(role="system", content="sys")]
    for i in range(6):
        msgs += [M(role="user", content=f"q{i} " + "w" * 4000), M(role="assistant",
                                                                  content=f"a{i} " + "w" * 4000)]
    msgs.append(M(role="user", content="now?"))
    out = await context.consolidate(msgs, 8000, model)
    assert out[1].role == "system"
    assert out[1].content.startswith("[Memory Summary - ")
    assert "SUMMARY: user asked about leave" in out[1].content
    assert out[-1].content == "now?"
    assert len(out) < len(msgs)
    assert model.requests[0].messages[0].content.startswith("You are a conversation summarizer")
