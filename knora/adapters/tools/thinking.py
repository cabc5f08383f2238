"""``thinking``: a sequential-thinking scratchpad; the thought is streamed to the UI as thinking (spec
§6.13)."""

from __future__ import annotations

from typing import Any, ClassVar

from knora.adapters.tools._base import BaseTool
from knora.ports.tool import ToolContext, ToolResult


class ThinkingTool(BaseTool):
    name = "thinking"
    description = ("Think step by step before acting: record one thought of a numbered sequence, revise "
                   "earlier thoughts or branch. Use it for complex questions that need planning; not for "
                   "simple lookups.")
    parameters: ClassVar[dict[str, Any]] = {"type": "object", "properties": {
        "thought": {"type": "string", "description": "The current thinking step"},
        "next_thought_needed": {"type": "boolean"},
        "thought_number": {"type": "integer", "minimum": 1},
        "total_thoughts": {"type": "integer", "minimum": 1},
        "is_revision": {"type": "boolean"}, "revises_thought": {"type": "integer", "minimum": 1},
        "branch_from_thought": {"type": "integer", "minimum": 1}, "branch_id": {"type": "string"},
        "needs_more_thoughts": {"type": "boolean"}},
        "required": ["thought", "next_thought_needed", "thought_number", "total_thoughts"]}

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        history: list[dict[str, Any]] = ctx.state.setdefault("thinking_history", [])
        total = max(int(args["total_thoughts"]), int(args["thought_number"]))
        history.append({**args, "total_thoughts": total})
        branches = sorted({h["branch_id"] for h in history if h.get("branch_id")})
        status = {"thought_number": args["thought_number"], "total_thoughts": total,
                  "next_thought_needed": args["next_thought_needed"], "branches": branches,
                  "thought_history_length": len(history)}
        nxt = "Continue with the next thought." if args["next_thought_needed"] else \
            "Thinking complete: act on it (call tools or answer)."
        eid = f"{ctx.tool_call_id or 'call'}-thinking-tool"
        for done, text in ((False, str(args["thought"])), (True, "")):  # shown to the user as thinking
            await ctx.emit("thought", {"content": text, "done": done, "event_id": eid,
                                       "source": "thinking_tool"})
        output = (f"Thought {args['thought_number']}/{total} recorded "
                  f"({len(history)} in history). {nxt}")
        return ToolResult(output=output, data={"display_type": "thinking", "thought": args["thought"],
                                               **status})


def make(deps: Any) -> ThinkingTool:
    return ThinkingTool(deps)
