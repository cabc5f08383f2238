"""Tool-call arguments as models really send them: ids normalised, JSON repaired (the shared extractor in
``domain/model_json.py``), handles checked (§6.4.2, §4.8)."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from knora.domain.model_json import extract_json, repair_json

__all__ = ["ID_KEYS", "normalize_call_id", "parse_arguments", "repair_json", "unresolved_handles"]

_ID_BAD = re.compile(r"[^a-zA-Z0-9_-]")
_HANDLE = re.compile(r"^[cdbwi]\d+$", re.IGNORECASE)
ID_KEYS = frozenset({"chunk_id", "faq_id", "chunk_ids", "faq_ids", "knowledge_id", "knowledge_ids",
                     "suspected_knowledge_ids", "knowledge_base", "knowledge_base_id", "knowledge_base_ids",
                     "kb_id", "kb_ids"})


def normalize_call_id(call_id: str, name: str, index: int) -> str:
    clean = _ID_BAD.sub("", call_id or "")
    if not clean:
        return "call_" + hashlib.sha256(f"{name}_{index}".encode()).hexdigest()[:6]
    if len(clean) > 64:
        return clean[:40] + "_" + hashlib.sha256(clean.encode()).hexdigest()[:23]
    return clean


def parse_arguments(raw: str) -> dict[str, Any]:
    """Raises ValueError with a model-readable message when nothing sensible can be recovered."""
    text = (raw or "").strip() or "{}"
    value = extract_json(text, repair=True)
    if isinstance(value, dict):
        return value
    if value is not None:
        raise ValueError(f"arguments must be a JSON object, got {type(value).__name__}")
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(str(exc)) from exc
    raise ValueError("unparseable arguments")  # pragma: no cover - loads succeeding means extract_json did


def unresolved_handles(args: dict[str, Any]) -> list[str]:
    """Handle-shaped values still under id keys after decoding: the registry did not know them."""
    found: list[str] = []
    for key, value in args.items():
        if key not in ID_KEYS:
            continue
        for v in value if isinstance(value, list) else [value]:
            if isinstance(v, str) and _HANDLE.match(v.strip()):
                found.append(v)
    return found


def signature(name: str, args: dict[str, Any]) -> str:
    return name + ":" + json.dumps(args, sort_keys=True, ensure_ascii=False, default=str)
