"""Prompt templates (YAML in this package) and the one function that renders them (spec §8.1).

Files hold ``templates: [{id, content, user?, mode?, default?}]``. Placeholders are written ``{name}``; the
WeKnora form ``{{name}}`` is accepted too, so prompts copied from WeKnora agents keep working. Rendering is a
single pass over known keys: a value that itself contains ``{other}`` is never expanded again, and unknown
placeholders (and JSON braces) are left verbatim. ``current_time``, ``current_week`` and ``yesterday`` are
filled automatically when the caller does not supply them.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from functools import cache
from importlib import resources
from typing import Any

import yaml

_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}")
_AUTO = ("current_time", "current_week", "yesterday")


@cache
def _load_all() -> dict[str, dict[str, Any]]:
    """id → template dict, across every YAML file of the package (first id wins)."""
    out: dict[str, dict[str, Any]] = {}
    for entry in sorted(resources.files(__package__).iterdir(), key=lambda p: p.name):
        if not entry.name.endswith(".yaml"):
            continue
        data = yaml.safe_load(entry.read_text(encoding="utf-8")) or {}
        for tpl in data.get("templates", []):
            tpl = dict(tpl)
            tpl["file"] = entry.name
            out.setdefault(str(tpl["id"]), tpl)
    return out


def template(template_id: str) -> dict[str, Any]:
    try:
        return _load_all()[template_id]
    except KeyError:
        raise KeyError(f"no prompt template {template_id!r}") from None


def content(template_id: str) -> str:
    return str(template(template_id).get("content", ""))


def user_content(template_id: str) -> str:
    return str(template(template_id).get("user", ""))


def templates_in(file_name: str) -> list[dict[str, Any]]:
    return [t for t in _load_all().values() if t["file"] == file_name]


def render(text: str, values: dict[str, Any] | None = None, *, now: datetime | None = None) -> str:
    """Substitute known placeholders in one pass; see the module docstring."""
    vals: dict[str, Any] = dict(values or {})
    if any(k not in vals for k in _AUTO):
        moment = now or datetime.now()
        vals.setdefault("current_time", moment.strftime("%Y-%m-%d %H:%M:%S"))
        vals.setdefault("current_week", moment.strftime("%A"))
        vals.setdefault("yesterday", (moment - timedelta(days=1)).strftime("%Y-%m-%d"))

    def repl(m: re.Match[str]) -> str:
        key = m.group(1) or m.group(2)
        return str(vals[key]) if key in vals else m.group(0)

    return _PLACEHOLDER.sub(repl, text)


_LANGUAGES = {"zh": "Chinese (Simplified)", "zh-cn": "Chinese (Simplified)", "zh-tw": "Chinese (Traditional)",
              "zh-hk": "Chinese (Traditional)", "en": "English", "en-us": "English", "en-gb": "English",
              "ko": "Korean", "ko-kr": "Korean", "ja": "Japanese", "ja-jp": "Japanese", "ru": "Russian",
              "fr": "French", "de": "German", "es": "Spanish"}


def language_name(locale: str, query: str = "") -> str:
    """The ``{language}`` value: an explicit locale wins; otherwise follow the question's script."""
    if locale:
        return _LANGUAGES.get(locale.strip().lower(), locale)
    if re.search(r"[\u3040-\u30ff]", query):
        return "Japanese"
    if re.search(r"[\uac00-\ud7af]", query):
        return "Korean"
    if re.search(r"[\u4e00-\u9fff]", query):
        return "Chinese (Simplified)"
    return "the same language as the user's question"
