"""Knowledge bases and their tags: WeKnora's create/update bodies and the records the API returns."""

from __future__ import annotations

from pydantic import BaseModel, Field

from knora.api.schemas.wire import Bool, Int, Obj, RequestBody, Str
from knora.domain.knowledge import ChunkingConfig, FAQConfig, IndexingStrategy, KnowledgeBase, Tag


class CreateKnowledgeBaseRequest(RequestBody):
    name: Str = None
    description: Str = None
    type: Str = Field(None, description="document | faq")
    is_temporary: Bool = None
    chunking_config: Obj = None
    embedding_model_id: Str = None
    summary_model_id: Str = None
    rerank_model_id: Str = None
    indexing_strategy: Obj = None
    faq_config: Obj = None
    retrieval_config: Obj = None
    question_generation_config: Obj = None
    extract_config: Obj = None
    vector_store_id: Str = None
    storage_provider_config: Obj = Field(None, description="{provider}: 'local', Knora's one provider")
    storage_backend_id: Str = Field(None, description="'builtin-local', the one row of /storage-backends")
    storage_config: Obj = Field(None, description="legacy: its provider is read as storage_provider_config's")


class UpdateKnowledgeBaseRequest(CreateKnowledgeBaseRequest):
    """Only the fields sent change; ``config`` may carry the same fields nested (the web UI sends both)."""

    config: Obj = None


class KnowledgeBaseConfig(BaseModel):
    chunking_config: ChunkingConfig
    indexing_strategy: IndexingStrategy
    faq_config: FAQConfig | None


class KnowledgeBaseOut(KnowledgeBase):
    """A knowledge base as returned; counts and sharing fields come with lists, gets and updates."""

    config: KnowledgeBaseConfig
    image_processing_config: dict[str, str] = Field(description="{model_id}: the captioning VLM when enabled")
    storage_config: dict[str, str] = Field(description="legacy: the provider, other fields empty")
    is_processing: bool = False
    knowledge_count: int | None = None
    chunk_count: int | None = None
    processing_count: int | None = None
    share_count: int | None = None
    is_pinned: bool | None = None
    pinned_at: str | None = None
    creator_name: str | None = None
    my_permission: str | None = Field(None, description="'owner' on a single get")


class TagRequest(RequestBody):
    name: Str = None
    color: Str = None
    sort_order: Int = None


class TagOut(Tag):
    knowledge_count: int
    chunk_count: int
