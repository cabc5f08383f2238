"""Search records: what engines return, and the public SearchResult (spec appendix A.2)."""

from __future__ import annotations

from enum import IntEnum
from typing import Any

from pydantic import BaseModel, Field


class MatchType(IntEnum):
    EMBEDDING = 0
    KEYWORDS = 1
    NEARBY_CHUNK = 2
    HISTORY = 3
    PARENT_CHUNK = 4
    RELATION_CHUNK = 5
    GRAPH = 6
    WEB_SEARCH = 7
    DIRECT_LOAD = 8
    DATA_ANALYSIS = 9


class IndexRow(BaseModel):
    """One row handed to a retrieval engine. ``source_id`` is unique per row: a chunk id, or
    ``<chunk>-<question>`` for a generated/similar question that points back at its chunk."""

    source_id: str
    chunk_id: str
    knowledge_id: str
    knowledge_base_id: str
    tenant_id: int
    content: str
    embedding: list[float] | None = None
    tag_id: str | None = None
    is_enabled: bool = True
    is_recommended: bool = True
    knowledge_type: str = "document"  # document | faq


class EngineHit(BaseModel):
    chunk_id: str
    source_id: str
    score: float
    match_type: MatchType
    content: str = ""  # the indexed text that matched


class ChunkSpan(BaseModel):
    """Where one source chunk sits in a merged passage: ``content[start:end]`` (code points) is that chunk's
    text (spans of neighbours may overlap where the chunker overlapped them; the last one may be cut where
    the passage was capped). ``location`` is the chunk's place in its document ("p. 12"), "" when none."""

    chunk_id: str
    start: int
    end: int
    chunk_index: int = 0
    location: str = ""


class SearchResult(BaseModel):
    """WeKnora's SearchResult JSON plus Knora's per-path scores (``scores``) for the debug view, and — for a
    passage merged from several chunks — ``spans``, the map from its text back to each source chunk (an
    additive field, left out of the JSON when empty, so an unmerged result keeps WeKnora's exact shape)."""

    id: str
    content: str
    knowledge_id: str
    chunk_index: int = 0
    knowledge_title: str = ""
    start_at: int = 0
    end_at: int = 0
    seq: int = 0
    score: float = 0.0
    match_type: int = MatchType.EMBEDDING
    sub_chunk_id: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    chunk_type: str = "text"
    parent_chunk_id: str = ""
    image_info: str = ""
    knowledge_filename: str = ""
    knowledge_source: str = ""
    knowledge_channel: str = ""
    knowledge_base_id: str = ""
    knowledge_description: str = ""
    matched_content: str = ""
    chunk_metadata: dict[str, Any] | None = None
    # vector, keyword, fused, rerank … (Knora extension)
    scores: dict[str, float] = Field(default_factory=dict)
    spans: list[ChunkSpan] = Field(default_factory=list, exclude_if=lambda spans: not spans)


class SearchParams(BaseModel):
    """One HybridSearch call (spec §3.1). ``None`` thresholds mean "the tenant's / KB's RetrievalConfig"."""

    knowledge_base_id: str = ""  # the primary KB; defaults to knowledge_base_ids[0]
    query_text: str
    query_embedding: list[float] | None = None
    vector_threshold: float | None = None
    keyword_threshold: float | None = None
    match_count: int = 0  # <= 0 → 50 (DefaultRetrievalTopK)
    disable_keywords_match: bool = False
    disable_vector_match: bool = False
    knowledge_ids: list[str] = Field(default_factory=list)
    tag_ids: list[str] = Field(default_factory=list)
    scope_tag_ids: list[str] = Field(default_factory=list)
    only_recommended: bool = False
    knowledge_base_ids: list[str] = Field(default_factory=list)
    skip_context_enrichment: bool = False
    fusion: str = ""  # Knora extension: this call's fusion mode instead of the KB's / tenant's (evaluation)


class SearchTarget(BaseModel):
    """Spec §1.8: what one retrieval call covers. ``knowledge`` targets carry explicit document ids."""

    type: str = "knowledge_base"  # knowledge_base | knowledge
    knowledge_base_id: str
    tenant_id: int
    knowledge_ids: list[str] = Field(default_factory=list)
    tag_ids: list[str] = Field(default_factory=list)
    scope_tag_ids: list[str] = Field(default_factory=list)
    disable_recall_thresholds: bool = False

    def recall_thresholds(self, vector: float, keyword: float) -> tuple[float, float]:
        return (0.0, 0.0) if self.disable_recall_thresholds else (vector, keyword)
