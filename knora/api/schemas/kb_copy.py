"""Bodies and answers of the knowledge-base copy routes (``knora.api.routes.kb_copy``), as WeKnora's Go SDK
types them (``CopyKnowledgeBaseRequest``/``Response``, ``KBCloneProgress``)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from knora.api.schemas.knowledge_bases import KnowledgeBaseOut
from knora.api.schemas.wire import RequestBody, Str


class CopyKnowledgeBaseRequest(RequestBody):
    source_id: Str = None
    target_id: Str = Field(None, description="empty: a new knowledge base with the source's settings")
    task_id: Str = Field(None, description="the client's own id for the task (a new one when empty)")


class CopyKnowledgeBaseOut(BaseModel):
    task_id: str
    source_id: str
    target_id: str
    message: str


class DuplicateKnowledgeBaseOut(CopyKnowledgeBaseOut):
    knowledge_base: KnowledgeBaseOut


class KBCloneProgressOut(BaseModel):
    task_id: str
    source_id: str
    target_id: str
    status: str = Field(description="pending | processing | completed | failed")
    progress: int = Field(description="0-100")
    total: int
    processed: int
    message: str
    error: str | None = None
    created_at: int = Field(description="Unix seconds")
    updated_at: int = Field(description="Unix seconds")


class RebuildIndexOut(BaseModel):
    task_id: str
    knowledge_base_id: str
    document_count: int = Field(description="the completed documents the job re-indexes")
