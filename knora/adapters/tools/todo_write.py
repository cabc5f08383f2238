"""``todo_write``: keep a research plan with per-step status; the output renders progress (spec §6.13)."""

from __future__ import annotations

from typing import Any, ClassVar

from knora.adapters.tools._base import BaseTool
from knora.ports.tool import ToolContext, ToolResult

_MARK = {"pending": "[ ]", "in_progress": "[~]", "completed": "[x]"}


class TodoWriteTool(BaseTool):
    name = "todo_write"
    description = ("Create or update the plan for a multi-step investigation: the task and its steps with "
                   "status pending, in_progress or completed. Send the whole list each time.")
    parameters: ClassVar[dict[str, Any]] = {"type": "object", "properties": {
        "task": {"type": "string"},
        "steps": {"type": "array", "items": {"type": "object", "properties": {
            "id": {"type": "string"}, "description": {"type": "string"},
            "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]}},
            "required": ["description", "status"]}}},
        "required": ["task"]}

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        steps = [{"id": s.get("id") or str(i + 1), "description": s["description"], "status": s["status"]}
                 for i, s in enumerate(args.get("steps") or [])]
        ctx.state["plan"] = {"task": args["task"], "steps": steps}
        done = sum(1 for s in steps if s["status"] == "completed")
        lines = [f"Plan: {args['task']}", f"Progress: {done}/{len(steps)} completed"]
        lines += [f"{_MARK[s['status']]} {s['id']}. {s['description']}" for s in steps]
        return ToolResult(output="\n".join(lines), data={"display_type": "plan", "task": args["task"],
                                                         "steps": steps, "completed": done,
                                                         "total": len(steps)})


def make(deps: Any) -> TodoWriteTool:
    return TodoWriteTool(deps)
