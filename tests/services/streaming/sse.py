"""A strict SSE parser for WeKnora's wire format (api §2.1): it fails on anything a strict client would
reject."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

FIELD_ORDER = ["id", "response_type", "content", "done", "knowledge_references", "session_id",
               "assistant_message_id", "tool_calls", "data", "usage", "finish_reason"]


@dataclass
class Stream:
    frames: list[dict[str, Any]] = field(default_factory=list)
    comments: int = 0

    @property
    def types(self) -> list[str]:
        return [f["response_type"] for f in self.frames]

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [f for f in self.frames if f["response_type"] == kind]

    def answer(self) -> str:
        return "".join(f["content"] for f in self.of("answer"))


def parse_sse(raw: bytes | str) -> Stream:
    text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
    out = Stream()
    if not text:
        return out
    assert text.endswith("\n\n"), f"stream does not end with a blank line: {text[-40:]!r}"
    for block in text[:-2].split("\n\n"):
        if block.startswith(":"):
            assert block in (": keep-alive",), block
            out.comments += 1
            continue
        lines = block.split("\n")
        assert len(lines) == 2, f"a frame is exactly two lines: {block!r}"
        assert lines[0] == "event:message", lines[0]
        assert lines[1].startswith("data:{"), lines[1][:20]
        assert not lines[1].startswith("data: "), lines[1][:20]
        payload = json.loads(lines[1][5:])
        keys = list(payload)
        assert keys == [k for k in FIELD_ORDER if k in payload], f"field order {keys}"
        assert isinstance(payload["id"], str)
        assert payload["id"]
        assert isinstance(payload["response_type"], str)
        assert isinstance(payload["content"], str)
        assert isinstance(payload["done"], bool)
        if "data" in payload:
            assert isinstance(payload["data"], dict), "data is omitted when empty"
            assert payload["data"], "data is omitted when empty"
        out.frames.append(payload)
    return out
