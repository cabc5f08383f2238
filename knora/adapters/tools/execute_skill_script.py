"""``execute_skill_script``: run a skill's script in a subprocess with CPU-time, memory and wall-clock limits.

The sandbox is the operating system's: ``resource.setrlimit`` (address space, CPU seconds, file size, no core
dumps) in the child before exec, a throw-away working directory, a minimal environment, and a kill on timeout.
It is off unless ``settings.skills_enabled``; it is not a container, which the tool's description does not
hide.
"""

from __future__ import annotations

import asyncio
import os
import resource
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any, ClassVar

from knora.adapters.tools._base import BaseTool
from knora.adapters.tools._skills import SCRIPT_EXTS, load_skills
from knora.ports.tool import ToolContext, ToolDeps, ToolResult

OUTPUT_CAP = 16384
INTERPRETERS = {".py": [sys.executable, "-I"], ".sh": ["sh"], ".bash": ["bash"], ".js": ["node"],
                ".rb": ["ruby"], ".pl": ["perl"], ".php": ["php"], ".ts": ["node"]}


def _limits(cpu_seconds: int, memory_mb: int) -> Any:
    def apply() -> None:
        mem = memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds))
        resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024 * 1024, 64 * 1024 * 1024))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        os.setsid()
    return apply


class ExecuteSkillScriptTool(BaseTool):
    name = "execute_skill_script"
    description = ("Run a script bundled with a skill (after read_skill). Runs in a subprocess with time and "
                   "memory limits and a scratch working directory; returns exit code, stdout and stderr.")
    parameters: ClassVar[dict[str, Any]] = {"type": "object", "properties": {
        "skill_name": {"type": "string"}, "script_path": {"type": "string"},
        "args": {"type": "array", "items": {"type": "string"}}, "input": {"type": "string"}},
        "required": ["skill_name", "script_path"]}

    def __init__(self, deps: ToolDeps) -> None:
        super().__init__(deps)
        self.timeout_seconds = float(self.settings.sandbox_timeout_seconds) + 5.0

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        s = self.settings
        skill = load_skills(s.skills_dir, ctx.state.get("allowed_skills")).get(str(args["skill_name"]))
        if skill is None:
            return ToolResult.fail(f"skill not found: {args['skill_name']}")
        script = skill.resolve(str(args["script_path"]))
        if script is None or script.suffix not in SCRIPT_EXTS:
            return ToolResult.fail(f"script not found in skill {skill.name}: {args['script_path']}")
        interp = INTERPRETERS.get(script.suffix, [])
        if not interp or (interp[0] != sys.executable and shutil.which(interp[0]) is None):
            return ToolResult.fail(f"no interpreter for {script.suffix} scripts on this server")
        timeout = float(s.sandbox_timeout_seconds)
        with tempfile.TemporaryDirectory(prefix="knora-skill-") as work:
            env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": work, "LANG": "C.UTF-8",
                   "KNORA_SKILL_DIR": str(skill.root), "KNORA_SKILL_OUTPUT_DIR": str(Path(work) / "output")}
            (Path(work) / "output").mkdir()
            proc = await asyncio.create_subprocess_exec(
                *interp, str(script), *[str(a) for a in args.get("args") or []], cwd=work, env=env,
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                preexec_fn=_limits(max(int(timeout), 1), int(s.sandbox_memory_mb)))
            try:
                out, err = await asyncio.wait_for(proc.communicate(str(args.get("input") or "").encode()),
                                                  timeout)
            except TimeoutError:
                proc.kill()
                await proc.wait()
                return ToolResult.fail(f"script timed out after {timeout:g}s", exit_code=-9)
            outputs = sorted(p.name for p in (Path(work) / "output").iterdir())
        stdout = out.decode("utf-8", "replace")[:OUTPUT_CAP]
        stderr = err.decode("utf-8", "replace")[:OUTPUT_CAP // 2]
        code = proc.returncode
        text = (f"exit code: {code}\n--- stdout ---\n{stdout}"
                + (f"\n--- stderr ---\n{stderr}" if stderr else ""))
        return ToolResult(output=text, data={"display_type": "script_result", "exit_code": code,
                                             "stdout": stdout, "stderr": stderr, "output_files": outputs})


def make(deps: ToolDeps) -> ExecuteSkillScriptTool | None:
    s = deps.settings
    return ExecuteSkillScriptTool(deps) if s is not None and s.skills_enabled and s.skills_dir else None
