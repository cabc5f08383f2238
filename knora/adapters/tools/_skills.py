"""Skills on disk (spec §6.10): a folder per skill with ``SKILL.md`` (YAML front matter + instructions)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import yaml

NAME_RE = re.compile(r"^[\w-]{1,64}$", re.UNICODE)
RESERVED = ("anthropic", "claude")
SCRIPT_EXTS = (".py", ".sh", ".bash", ".js", ".ts", ".rb", ".pl", ".php")


@dataclass
class Skill:
    name: str
    description: str
    root: Path
    body: str

    def files(self) -> list[str]:
        return sorted(str(p.relative_to(self.root)) for p in self.root.rglob("*") if p.is_file())

    def resolve(self, rel: str) -> Path | None:
        """A file inside the skill folder; None for anything escaping it (``..``, absolute paths, symlinks
        out)."""
        target = (self.root / rel).resolve()
        root = self.root.resolve()
        return target if target.is_file() and (target == root or root in target.parents) else None


def parse_skill(folder: Path) -> Skill | None:
    md = folder / "SKILL.md"
    if not md.is_file():
        return None
    text = md.read_text(encoding="utf-8", errors="replace")
    meta: dict[str, object] = {}
    body = text
    if text.startswith("---"):
        _, _, rest = text.partition("---")
        front, sep, body = rest.partition("\n---")
        if sep:
            loaded = yaml.safe_load(front) or {}
            meta = loaded if isinstance(loaded, dict) else {}
            body = body.lstrip("-\n")
    name = str(meta.get("name") or folder.name)
    desc = str(meta.get("description") or "")
    if not NAME_RE.match(name) or any(r in name.lower() for r in RESERVED) or len(desc) > 1024:
        return None
    return Skill(name=name, description=desc, root=folder, body=body.strip())


def load_skills(skills_dir: Path | None, allowed: list[str] | None = None) -> dict[str, Skill]:
    if skills_dir is None or not Path(skills_dir).is_dir():
        return {}
    out: dict[str, Skill] = {}
    for folder in sorted(Path(skills_dir).iterdir()):
        skill = parse_skill(folder) if folder.is_dir() else None
        if skill and (allowed is None or skill.name in allowed) and skill.name not in out:
            out[skill.name] = skill
    return out


def skills_prompt(skills: dict[str, Skill]) -> str:
    if not skills:
        return ""
    lines = ["### Available Skills",
             ("Before answering, check whether a skill below matches the request; if so, "
             "load it with read_skill(skill_name) and follow its instructions (scripts run with "
             "execute_skill_script).")]
    lines += [f"{i}. {s.name}: {s.description}" for i, s in enumerate(skills.values(), 1)]
    return "\n".join(lines)
