"""FAQ entries: import, delete and search bodies (validated here, as before) and the entry record returned."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from knora.services.retrieval.faq import FaqEntryIn


class ImportBody(BaseModel):
    entries: list[FaqEntryIn] = Field(default_factory=list)
    mode: str = "append"
    knowledge_id: str | None = None
    task_id: str | None = None
    dry_run: bool = False


class DeleteBody(BaseModel):
    ids: list[int] = Field(default_factory=list)


class FaqSearchBody(BaseModel):
    query_text: str = ""
    vector_threshold: float | None = None
    match_count: int = 10
    first_priority_tag_ids: list[Any] = Field(default_factory=list)
    second_priority_tag_ids: list[Any] = Field(default_factory=list)
    only_recommended: bool = False


class FaqEntryOut(BaseModel):
    """``id`` is WeKnora's integer sequence id; ``tag_id`` is 0 when the entry has no tag."""

    id: int
    chunk_id: str
    knowledge_id: str
    knowledge_base_id: str
    standard_question: str
    similar_questions: list[str]
    negative_questions: list[str]
    answers: list[str]
    answer_strategy: str
    tag_id: str | int
    tag_name: str
    is_enabled: bool
    is_recommended: bool
    created_at: datetime
    updated_at: datetime


class FaqTask(BaseModel):
    task_id: str


class FaqDeleted(BaseModel):
    deleted: int
