"""Bodies and answers of the document-move routes (``knora.api.routes.knowledge_move``), as WeKnora types
them (``MoveKnowledgeRequest``/``Response``, ``KnowledgeMoveProgress``)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from knora.api.schemas.wire import RequestBody, Str, StrList


class MoveKnowledgeRequest(RequestBody):
    knowledge_ids: StrList = None
    source_kb_id: Str = None
    target_kb_id: Str = None
    mode: Str = Field(None, description="reuse_vectors (same embedding model) | reparse")


class MoveKnowledgeOut(BaseModel):
    task_id: str
    source_kb_id: str
    target_kb_id: str
    knowledge_count: int
    message: str


class KnowledgeMoveProgressOut(BaseModel):
    task_id: str
    source_kb_id: str
    target_kb_id: str
    status: str = Field(description="pending | processing | completed | failed")
    progress: int = Field(description="0-100")
    total: int
    processed: int
    failed: int
    message: str
    error: str
    created_at: int = Field(description="Unix seconds")
    updated_at: int = Field(description="Unix seconds")
