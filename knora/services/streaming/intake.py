"""The chat request body (api §1.5 "Chat and search", spec §5.10) and merging of @-mentions into the scope."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class ChatBody(BaseModel):
    """``CreateKnowledgeQARequest``; unknown fields are ignored, as WeKnora's clients send extra ones."""

    model_config = ConfigDict(extra="ignore")

    query: str = ""
    knowledge_base_ids: list[str] = Field(default_factory=list)
    knowledge_ids: list[str] = Field(default_factory=list)
    tag_ids: list[str] = Field(default_factory=list)
    agent_enabled: bool = False
    agent_id: str = ""
    agent_source_tenant_id: int | None = None
    web_search_enabled: bool = False
    summary_model_id: str = ""
    mcp_service_ids: list[str] = Field(default_factory=list)
    skill_names: list[str] = Field(default_factory=list)
    mentioned_items: list[dict[str, Any]] = Field(default_factory=list)
    disable_title: bool = False
    images: list[dict[str, Any]] = Field(default_factory=list)
    channel: str = "web"
    # Knora extensions
    citations_enabled: bool = True
    language: str = ""


def _dedupe(values: list[str]) -> list[str]:
    return list(dict.fromkeys(v for v in values if v))


def merge_targets(body: ChatBody) -> tuple[list[str], list[str], list[str]]:
    """Request ids plus @kb / @file / @tag mentions → (KB ids, knowledge ids, tag ids), deduped, order
    kept."""
    kbs, docs, tags = list(body.knowledge_base_ids), list(body.knowledge_ids), list(body.tag_ids)
    for item in body.mentioned_items:
        kind, item_id = str(item.get("type") or ""), str(item.get("id") or "")
        if kind == "kb":
            kbs.append(item_id)
        elif kind == "file":
            docs.append(item_id)
        elif kind == "tag":
            tags.append(item_id)
    return _dedupe(kbs), _dedupe(docs), _dedupe(tags)
