"""Wire shapes shared by several routers: domain records → WeKnora JSON, and the id check routes share.

Kept apart from any one router so that routers import each other for nothing; each function adds exactly the
fields WeKnora clients read beyond the domain record (see the response models in ``knora.api.schemas``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from knora.domain.agent_settings import wire_config
from knora.domain.common import is_uuid, rfc3339
from knora.domain.errors import NotFound
from knora.domain.knowledge import Chunk, Knowledge, KnowledgeBase
from knora.domain.models import AgentConfig, ModelConfig
from knora.domain.search import SearchResult
from knora.ports.store import KBStats

# The largest page a list route serves: (page - 1) * page_size becomes an SQL OFFSET, which must fit SQLite's
# and PostgreSQL's 64-bit integers (page=99999999999999999999 was a 500 under fuzzing).
MAX_PAGE = 1_000_000


def require_id(value: str, what: str) -> str:
    """A malformed id cannot name anything: answer 404 like an unknown one (api §1.6 UUID ids)."""
    if not is_uuid(value):
        raise NotFound(f"{what} not found")
    return value


# WeKnora's legacy ``storage_config`` (its old COS column): only the provider is Knora's, the rest is empty
_LEGACY_STORAGE = dict.fromkeys(("secret_id", "secret_key", "region", "bucket_name", "app_id",
                                 "path_prefix"), "")


def kb_json(kb: KnowledgeBase, stats: KBStats | None = None, pinned_at: datetime | None = None
            ) -> dict[str, Any]:
    out = kb.model_dump(mode="json")
    out["config"] = {"chunking_config": out["chunking_config"], "indexing_strategy": out["indexing_strategy"],
                     "faq_config": out["faq_config"]}
    # fields WeKnora's KnowledgeBase always has; images are captioned by the ``vlm_config`` model
    out["image_processing_config"] = {"model_id": kb.vlm_config.model_id if kb.vlm_config.enabled else ""}
    out["vlm_config"] = {"enabled": kb.vlm_config.enabled, "model_id": kb.vlm_config.model_id}
    provider = kb.storage_provider_config.provider if kb.storage_provider_config else ""
    out["storage_config"] = {**_LEGACY_STORAGE, "provider": provider}
    out["extract_config"] = {"enabled": False, **out["extract_config"]}
    out["is_processing"] = bool(stats and kb.type == "faq" and stats.processing_count)
    if stats is not None:
        out.update(stats.model_dump())
        out.update({"share_count": 0, "is_pinned": pinned_at is not None, "pinned_at": rfc3339(pinned_at),
                    "creator_name": ""})
    return out


def knowledge_json(k: Knowledge) -> dict[str, Any]:
    out = k.model_dump(mode="json")
    out.setdefault("summary_status", "none")
    out["tag_id"] = k.tag_id or ""  # Go's string: "" for none, never null
    out["storage_size"] = k.file_size
    out["folder_path"] = ""
    return out


_CHUNK_ID_FIELDS = ("tag_id", "parent_chunk_id", "pre_chunk_id", "next_chunk_id")


def chunk_json(c: Chunk) -> dict[str, Any]:
    out = c.model_dump(mode="json")
    out["status"] = 2 if c.index_status == "ready" else 1
    out["image_info"] = c.image_info_text()
    for name in _CHUNK_ID_FIELDS:  # Go's string: "" for none, never null
        out[name] = out[name] or ""
    # WeKnora's chunk fields Knora has no use for, as WeKnora writes them for a live chunk.
    out["indirect_relation_chunks"] = []
    out["deleted_at"] = None
    return out


def model_json(m: ModelConfig) -> dict[str, Any]:
    out = m.model_dump(mode="json", exclude={"api_key"})
    out["credentials"] = {"api_key": {"configured": bool(m.api_key)}}
    return out


def results_json(results: list[SearchResult]) -> list[dict[str, Any]]:
    return [r.model_dump(mode="json") for r in results]


def agent_json(a: AgentConfig) -> dict[str, Any]:
    """WeKnora's ``CustomAgent``: its config with every field WeKnora always sends (``wire_config``), and
    ``created_by`` — Knora records no creating user (tenants, not users, own agents), so it is empty."""
    out = a.model_dump(mode="json")
    out["config"] = wire_config(out["config"])
    out.setdefault("created_by", "")
    return out
