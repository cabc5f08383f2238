"""Search bodies (WeKnora field names). Unlike the store bodies these are validated here: a wrong type is a
400 naming the field (``knora.api.body.parse``), as it always was for search."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class HybridSearchBody(BaseModel):
    query_text: str = ""
    vector_threshold: float | None = None
    keyword_threshold: float | None = None
    match_count: int = 0
    disable_keywords_match: bool = False
    disable_vector_match: bool = False
    knowledge_ids: list[str] = Field(default_factory=list)
    tag_ids: list[str] = Field(default_factory=list)
    only_recommended: bool = False
    knowledge_base_ids: list[str] = Field(default_factory=list)
    skip_context_enrichment: bool = False


class KnowledgeSearchBody(BaseModel):
    query: str = ""
    knowledge_base_id: str = ""
    knowledge_base_ids: list[str] = Field(default_factory=list)
    knowledge_ids: list[str] = Field(default_factory=list)
    tag_ids: list[str] = Field(default_factory=list)
    mentioned_items: list[dict[str, Any]] = Field(default_factory=list)
