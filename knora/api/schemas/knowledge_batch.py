"""Bodies and answers of the document list's batch routes and of a manual entry's edit
(``knora.api.routes.knowledge_batch``)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from knora.api.schemas.knowledge import KnowledgeOut
from knora.api.schemas.wire import Obj, RequestBody, Str, StrList


class BatchKnowledgeRequest(RequestBody):
    kb_id: Str = None
    ids: StrList = None
    process_config: Obj = Field(None, description="WeKnora's KnowledgeProcessOverrides: replaces each "
                                "document's stored upload options for this and later re-parses")


class KnowledgeTagBatchRequest(RequestBody):
    updates: Obj = Field(None, description="document id → list of tag ids (Knora keeps one tag per document)")
    kb_id: Str = None


class UpdateManualRequest(RequestBody):
    title: Str = None
    content: Str = None
    status: Str = Field(None, description="draft | publish")


class BatchDeleteOut(BaseModel):
    task_id: str
    deleted_count: int
    matched_count: int
    excluded_count: int = 0


class BatchReparseOut(BaseModel):
    task_id: str
    reparse_count: int
    matched_count: int
    excluded_count: int = 0


class TagBatchOut(BaseModel):
    updated_count: int
    matched_count: int
    excluded_count: int = 0


class KnowledgeSearchOut(BaseModel):
    success: bool = True
    data: list[KnowledgeOut]
    has_more: bool
    total: int
