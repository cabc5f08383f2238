"""Read-only views of one document that WeKnora's document page shows: the preview (the original, or the text
Knora indexed when it keeps no original), the processing timeline (``/knowledge/:id/spans``) and the folder
tree of a knowledge base.

Knora keeps the original of every upload and manual entry in its blob store (``knora.ports.blobs``) and
serves it with the content type its extension names. A URL import keeps no original (the page is fetched at
parse time), so its preview is the text that was indexed, rebuilt from its chunks in order.

Knora records no per-stage rows for a document, only its outcome (``parse_status``, ``processed_at``,
``error_message``), so the timeline is the one WeKnora synthesises for a document without span rows: its
five stages carry the status the outcome implies, with multimodal ``skipped`` (Knora runs no image
pipeline). Knora has no folders: every document sits at the root of its knowledge base.
"""

from __future__ import annotations

import mimetypes
from dataclasses import dataclass
from typing import Any

from knora.domain.common import rfc3339
from knora.domain.errors import NotFound
from knora.domain.knowledge import ChunkType, Knowledge, ParseStatus
from knora.ports.blobs import BlobStore
from knora.ports.store import ChunkRepo

# extension → content type where the platform table has none or a poor one (text gets a charset below)
_TYPES = {"md": "text/markdown", "markdown": "text/markdown", "csv": "text/csv",
          "tsv": "text/tab-separated-values", "json": "application/json", "jsonl": "application/x-ndjson",
          "log": "text/plain", "text": "text/plain",
          "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
          "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
          "eml": "message/rfc822", "msg": "application/vnd.ms-outlook",
          "pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
          "odt": "application/vnd.oasis.opendocument.text",
          "ods": "application/vnd.oasis.opendocument.spreadsheet",
          "odp": "application/vnd.oasis.opendocument.presentation"}
STAGES = ("docreader", "chunking", "embedding", "multimodal", "postprocess")
_PAGE = 500


@dataclass(frozen=True)
class Preview:
    data: bytes
    content_type: str
    file_name: str


def content_type(file_name: str, file_type: str) -> str:
    ext = (file_type or (file_name.rsplit(".", 1)[-1] if "." in file_name else "")).lower().lstrip(".")
    found = _TYPES.get(ext) or mimetypes.guess_type(f"x.{ext}")[0] or "application/octet-stream"
    if found.startswith("text/") or found in ("application/json", "application/x-ndjson"):
        found += "; charset=utf-8"
    return found


async def indexed_text(chunks: ChunkRepo, k: Knowledge) -> str:
    """The document's text chunks stitched in order; the overlap between neighbours is dropped by their
    offsets (``start_at``/``end_at`` into the parsed text)."""
    parts: list[str] = []
    covered = 0
    page = 1
    while True:
        got = await chunks.list(k.tenant_id, k.id, page=page, page_size=_PAGE,
                                chunk_types=[str(ChunkType.TEXT)])
        for c in sorted(got.items, key=lambda c: c.chunk_index):
            if c.end_at > c.start_at and c.start_at < covered <= c.end_at \
                    and c.end_at - c.start_at == len(c.content):
                parts.append(c.content[covered - c.start_at:])
            else:
                parts.append(("\n\n" if parts else "") + c.content)
            covered = max(covered, c.end_at)
        if page * _PAGE >= got.total or not got.items:
            return "".join(parts)
        page += 1


async def preview(k: Knowledge, blobs: BlobStore, chunks: ChunkRepo) -> Preview:
    if k.file_path:
        try:
            data = await blobs.get(k.file_path)
        except KeyError as exc:
            raise NotFound("The stored original is missing") from exc
        return Preview(data, content_type(k.file_name, k.file_type), k.file_name or "document")
    text = await indexed_text(chunks, k)
    if not text:
        raise NotFound("This document has no stored original and no indexed text yet")
    name = (k.file_name or k.title or "document").rsplit(".", 1)[0] + ".md"
    return Preview(text.encode(), "text/markdown; charset=utf-8", name)


def _stage_status(k: Knowledge, stage: str) -> str:
    if stage == "multimodal":
        return "skipped"
    if k.parse_status == ParseStatus.COMPLETED:
        return "done"
    if k.parse_status == ParseStatus.FAILED:
        return "failed" if stage == "docreader" else "cancelled"
    if k.parse_status == ParseStatus.PROCESSING:
        return "running" if stage == "docreader" else "pending"
    return "pending"


def spans(k: Knowledge) -> dict[str, Any]:
    """WeKnora's ``GET /knowledge/:id/spans`` answer for a document without span rows."""
    started, finished = rfc3339(k.created_at), rfc3339(k.processed_at)
    root_status = {ParseStatus.COMPLETED: "done", ParseStatus.FAILED: "failed",
                   ParseStatus.PROCESSING: "running"}.get(k.parse_status, "pending")

    def node(name: str, kind: str, status: str) -> dict[str, Any]:
        out: dict[str, Any] = {"knowledge_id": k.id, "attempt": 1, "span_id": "" if kind == "root" else name,
                               "name": name, "kind": kind, "status": status,
                               "created_at": started, "updated_at": rfc3339(k.updated_at)}
        if kind == "root":
            out["started_at"] = started
            if finished and status in ("done", "failed"):
                out["finished_at"] = finished
                out["duration_ms"] = max(0, int((k.processed_at - k.created_at).total_seconds() * 1000)) \
                    if k.processed_at else 0
        else:
            out["parent_span_id"] = ""
        return out

    root = node("knowledge_processing", "root", root_status)
    root["children"] = [node(s, "stage", _stage_status(k, s)) for s in STAGES]
    current = "docreader" if k.parse_status == ParseStatus.PROCESSING else ""
    out: dict[str, Any] = {"knowledge_id": k.id, "attempt": 1, "latest_attempt": 1,
                           "parse_status": str(k.parse_status), "current_attempt": 1,
                           "current_stage": current,
                           "trace": root}
    if k.parse_status == ParseStatus.FAILED and k.error_message:
        out["last_error"] = {"stage": "docreader", "code": "UNKNOWN", "message": k.error_message,
                             "name": "docreader", "error_code": "UNKNOWN", "error_message": k.error_message,
                             "finished_at": rfc3339(k.updated_at)}
    return out


def folder_tree(total: int) -> dict[str, Any]:
    """WeKnora's ``KnowledgeFolderTree``: Knora has no folders, so every document is at the root."""
    return {"root_document_count": total, "total_document_count": total, "folders": []}
