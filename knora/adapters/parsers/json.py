"""JSON and JSON Lines: flattened to ``path: value`` lines so every value is findable together with its key.

Pretty-printed JSON spends most characters on braces and indentation; ``a.b[2].c: value`` lines keep the key
path next to the value, which is what both keyword and vector search need.
"""

from __future__ import annotations

import json
from typing import Any

from knora.adapters.parsers._common import decode_text, file_stem, normalise_text
from knora.ports.parser import ParsedDocument, ParseError

_TITLE_KEYS = ("title", "name", "subject")
_MAX_DEPTH = 64


def _flatten(value: Any, path: str, out: list[str], depth: int = 0) -> None:
    if depth > _MAX_DEPTH:
        out.append(f"{path}: {json.dumps(value, ensure_ascii=False)}")
        return
    if isinstance(value, dict):
        if not value:
            out.append(f"{path}: {{}}" if path else "{}")
        for key, child in value.items():
            _flatten(child, f"{path}.{key}" if path else str(key), out, depth + 1)
    elif isinstance(value, list):
        if not value:
            out.append(f"{path}: []" if path else "[]")
        for i, child in enumerate(value):
            _flatten(child, f"{path}[{i}]", out, depth + 1)
    else:
        rendered = "null" if value is None else (json.dumps(value) if isinstance(value, bool) else str(value))
        out.append(f"{path}: {rendered}" if path else rendered)


class JsonParser:
    extensions: frozenset[str] = frozenset({"json", "jsonl", "ndjson"})

    def parse(self, data: bytes, file_name: str) -> ParsedDocument:
        raw = decode_text(data)
        lines: list[str] = []
        try:
            if file_name.lower().endswith((".jsonl", ".ndjson")):
                docs = [json.loads(line) for line in raw.splitlines() if line.strip()]
                for i, doc in enumerate(docs):
                    _flatten(doc, f"[{i}]", lines)
                first: Any = docs[0] if docs else None
            else:
                first = json.loads(raw)
                _flatten(first, "", lines)
        except (json.JSONDecodeError, RecursionError) as exc:
            raise ParseError(f"invalid JSON: {exc}") from exc
        title = ""
        if isinstance(first, dict):
            title = next((str(first[k]).strip() for k in _TITLE_KEYS
                          if isinstance(first.get(k), str) and first[k].strip()), "")
        return ParsedDocument(title=title or file_stem(file_name), text=normalise_text("\n".join(lines)),
                              metadata={"format": "json"})
