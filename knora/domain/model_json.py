"""JSON from a model's reply: the one extractor (query understanding, entity extraction, data analysis and
tool-call arguments all use it).

Models wrap JSON in prose and code fences, or slip (single quotes, unquoted keys, trailing commas, unclosed
brackets). Every caller used to try its own subset of remedies in its own order; here there is one order,
from the most literal reading to the most forgiving, and the caller says which values it can use.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator

JSONValue = object  # what json.loads returns; callers narrow with isinstance

_FENCE = re.compile(r"```([A-Za-z0-9_+-]*)[ \t]*\n?(.*?)```", re.DOTALL)


def outermost_span(text: str) -> str | None:
    """The first balanced ``{…}``/``[…]`` span, ignoring brackets inside JSON strings."""
    for start, ch in enumerate(text):
        if ch not in "[{":
            continue
        depth, in_str, esc = 0, False, False
        for i in range(start, len(text)):
            c = text[i]
            if in_str:
                esc = (c == "\\") and not esc
                if c == '"' and not esc:
                    in_str = False
                continue
            if c == '"':
                in_str = True
            elif c in "[{":
                depth += 1
            elif c in "]}":
                depth -= 1
                if depth == 0:
                    return text[start: i + 1]
        return None
    return None


def fenced_blocks(text: str) -> list[str]:
    """Bodies of ```` ``` ```` blocks, ``json``/unlabelled ones first; an unterminated fence's body too."""
    blocks = _FENCE.findall(text)
    preferred = [body for lang, body in blocks if lang.lower() in ("json", "")]
    out = preferred or [body for _, body in blocks]
    if not out and "```" in text:
        after = text.split("```", 1)[1]
        first, _, rest = after.partition("\n")
        body = rest if len(first.strip()) <= 16 and not first.strip().startswith(("[", "{")) else after
        out.append(body.split("```", 1)[0].strip("`"))
    return out


def repair_json(text: str) -> str:
    """Common model slips: code fences, single quotes, unquoted keys, trailing commas, unclosed brackets."""
    s = text.strip()
    if s.startswith("```"):
        s = re.sub(r"^```[a-zA-Z]*\s*|\s*```$", "", s)
    if "'" in s and '"' not in s:
        s = s.replace("'", '"')
    s = re.sub(r'([{,]\s*)([A-Za-z_][\w-]*)\s*:', r'\1"\2":', s)
    s = re.sub(r",\s*([}\]])", r"\1", s)
    stack: list[str] = []
    in_str = esc = False
    for ch in s:
        if in_str:
            esc = ch == "\\" and not esc
            if ch == '"' and not esc:
                in_str = False
            continue
        if ch == '"':
            in_str = True
        elif ch in "{[":
            stack.append("}" if ch == "{" else "]")
        elif ch in "}]" and stack:
            stack.pop()
    if in_str:
        s += '"'
    s = re.sub(r",\s*$", "", s)
    return s + "".join(reversed(stack))


def candidates(text: str, *, repair: bool = False) -> Iterator[str]:
    """The readings tried, in order: the whole reply, fenced blocks, the first balanced span, first ``{`` to
    last ``}``, and (``repair``) the repaired reply."""
    yield text
    yield from fenced_blocks(text)
    span = outermost_span(text)
    if span:
        yield span
    if "{" in text and "}" in text:
        yield text[text.find("{"): text.rfind("}") + 1]
    if repair:
        yield repair_json(text)


def _any(_value: JSONValue) -> bool:
    return True


def extract_json(text: str, *, accept: Callable[[JSONValue], bool] = _any, repair: bool = False
                 ) -> JSONValue | None:
    """The first reading of ``text`` that parses and that ``accept`` takes; ``None`` when there is none."""
    for cand in candidates(text, repair=repair):
        cand = cand.strip()
        if not cand:
            continue
        try:
            value: JSONValue = json.loads(cand)
        except json.JSONDecodeError:
            continue
        if accept(value):
            return value
    return None


def extract_object(text: str) -> dict[str, JSONValue] | None:
    """The first JSON object in the reply (prose, fences and lists around it are skipped)."""
    value = extract_json(text, accept=lambda v: isinstance(v, dict))
    return value if isinstance(value, dict) else None
