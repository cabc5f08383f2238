"""``read_skill``: progressive disclosure — SKILL.md body and file list, or one bundled file (spec §6.10)."""

from __future__ import annotations

from typing import Any, ClassVar

from knora.adapters.tools._base import BaseTool
from knora.adapters.tools._skills import load_skills
from knora.ports.tool import ToolContext, ToolDeps, ToolResult

MAX_FILE_CHARS = 60000


class ReadSkillTool(BaseTool):
    name = "read_skill"
    description = ("Read a skill's instructions (SKILL.md) and file list, "
                   "or one file of the skill (file_path).")
    parameters: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {"skill_name": {"type": "string"}, "file_path": {"type": "string"}},
        "required": ["skill_name"]}

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        skills = load_skills(self.settings.skills_dir, ctx.state.get("allowed_skills"))
        skill = skills.get(str(args["skill_name"]))
        if skill is None:
            return ToolResult.fail(f"skill not found: {args['skill_name']}. Available: {', '.join(skills)}")
        if args.get("file_path"):
            path = skill.resolve(str(args["file_path"]))
            if path is None:
                return ToolResult.fail(f"file not found in skill {skill.name}: {args['file_path']}")
            text = path.read_text(encoding="utf-8", errors="replace")[:MAX_FILE_CHARS]
            return ToolResult(output=text, data={"skill_name": skill.name, "file_path": args["file_path"]})
        files = "\n".join(f"- {f}" for f in skill.files())
        return ToolResult(output=f"# Skill: {skill.name}\n\n{skill.body}\n\n## Files\n{files}",
                          data={"skill_name": skill.name, "files": skill.files()})


def make(deps: ToolDeps) -> ReadSkillTool | None:
    s = deps.settings
    return ReadSkillTool(deps) if s is not None and s.skills_enabled and s.skills_dir else None
