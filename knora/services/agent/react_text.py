"""The text ReAct protocol for models without function calling (a Knora guard beyond WeKnora).

The tool definitions are described in the system prompt; the model answers with ``Action:`` / ``Action
Input:`` lines or ``Final Answer:``. Parsed actions become ordinary ``ToolCall``s, so the rest of the engine
(registry, guards, rendering, events) is the same for both protocols; observations go back as a user message.
"""

from __future__ import annotations

import json
import re
from typing import Any

from knora.ports.chat import ToolCall

_ACTION = re.compile(r"^\s*Action\s*:\s*(?P<name>[\w.\-]+)\s*$", re.MULTILINE | re.IGNORECASE)
_INPUT = re.compile(r"^\s*Action\s*Input\s*:\s*", re.MULTILINE | re.IGNORECASE)
_FINAL = re.compile(r"^\s*Final\s*Answer\s*:\s*", re.MULTILINE | re.IGNORECASE)
_THOUGHT = re.compile(r"^\s*Thought\s*:\s*", re.MULTILINE | re.IGNORECASE)


def protocol_prompt(definitions: list[dict[str, Any]]) -> str:
    lines = ["## Tools", "You can call the tools below. To call one, reply with exactly:",
             "Thought: <why you need it>", "Action: <tool name>", "Action Input: <JSON object of arguments>",
             ("You may put several Action/Action Input pairs in one reply. Then stop and wait: the results "
              "come back as an Observation message. When you can answer, reply with:"),
             "Final Answer: <the complete answer for the user>", "", "Available tools:"]
    for d in definitions:
        fn = d.get("function", d)
        lines.append(f"- {fn['name']}: {fn.get('description', '')}")
        lines.append(f"  parameters: {json.dumps(fn.get('parameters', {}), ensure_ascii=False)}")
    return "\n".join(lines)


def _json_object(text: str) -> str:
    """The first balanced ``{…}`` in text (strings and escapes honoured); else the stripped line."""
    start = text.find("{")
    if start < 0:
        return text.strip().splitlines()[0] if text.strip() else "{}"
    depth, in_str, esc = 0, False, False
    for i in range(start, len(text)):
        ch = text[i]
        if in_str:
            esc = (ch == "\\") and not esc
            if ch == '"' and not esc:
                in_str = False
            continue
        if ch == '"':
            in_str = True
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return text[start:i + 1]
    return text[start:]


def parse(text: str, round_index: int) -> tuple[str, list[ToolCall], str | None]:
    """→ (thought text, tool calls, final answer or None)."""
    actions = list(_ACTION.finditer(text))
    final = _FINAL.search(text)
    if final and (not actions or final.start() < actions[0].start()):
        thought = _THOUGHT.sub("", text[:final.start()]).strip()
        return thought, [], text[final.end():].strip()
    if not actions:
        return "", [], _THOUGHT.sub("", text).strip()
    calls: list[ToolCall] = []
    for i, m in enumerate(actions):
        end = actions[i + 1].start() if i + 1 < len(actions) else len(text)
        segment = text[m.end():end]
        inp = _INPUT.search(segment)
        args = _json_object(segment[inp.end():]) if inp else "{}"
        calls.append(ToolCall(id=f"react_{round_index}_{i}", name=m.group("name"), arguments=args))
    thought = _THOUGHT.sub("", text[:actions[0].start()]).strip()
    return thought, calls, None


def observation(results: list[tuple[str, str]]) -> str:
    return "\n\n".join(f"Observation ({name}):\n{text}" for name, text in results)
