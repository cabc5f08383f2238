"""Repositories of the store-api area (knowledge bases, documents, chunks, tags, models, jobs).

Services see persistence only through these Protocols; ``knora/adapters/db/repos/*`` implements them with
SQLAlchemy on SQLite and PostgreSQL. Every read is scoped by tenant where a tenant is known, so another
tenant's records are simply "not found".
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from knora.domain.knowledge import (
    Chunk,
    ChunkRevision,
    IngestProgress,
    Knowledge,
    KnowledgeBase,
    ParseStatus,
    Tag,
)
from knora.domain.models import ModelConfig
from knora.ports.jobs import JobRequest


class KBStats(BaseModel):
    knowledge_count: int = 0
    chunk_count: int = 0
    processing_count: int = 0


class KnowledgeFilter(BaseModel):
    tag_id: str | None = None
    keyword: str | None = None
    file_type: str | None = None
    parse_status: str | None = None
    source: str | None = None


class Page(BaseModel):
    """One page of a list plus the total count of the unpaged list."""

    items: list[Any] = Field(default_factory=list)
    total: int = 0


class JobRecord(BaseModel):
    id: str
    kind: str
    key: str | None = None
    payload: dict[str, Any] = Field(default_factory=dict)
    status: str = "queued"
    attempts: int = 0
    error: str = ""
    updated_at: datetime | None = None


@runtime_checkable
class KnowledgeBaseRepo(Protocol):
    async def create(self, kb: KnowledgeBase) -> KnowledgeBase: ...

    async def get(self, tenant_id: int, kb_id: str) -> KnowledgeBase | None: ...

    async def get_by_name(self, tenant_id: int, name: str) -> KnowledgeBase | None: ...

    async def list(self, tenant_id: int) -> list[KnowledgeBase]: ...

    async def update(self, kb: KnowledgeBase) -> KnowledgeBase: ...

    async def delete(self, tenant_id: int, kb_id: str) -> bool:
        """Removes the KB with its documents, chunks and tags (one transaction)."""
        ...

    async def stats(self, tenant_id: int, kb_ids: Sequence[str]) -> dict[str, KBStats]: ...


@runtime_checkable
class KnowledgeRepo(Protocol):
    async def create(self, k: Knowledge) -> Knowledge: ...

    async def create_with_job(self, k: Knowledge, job: JobRequest) -> Knowledge:
        """The document and its job in ONE transaction: a crash or a database error between the two can no
        longer leave a ``pending`` document that nothing will ever process."""
        ...

    async def requeue_with_job(self, knowledge_id: str, job: JobRequest) -> bool:
        """Back to ``pending`` and the job queued (unless one with its key is queued already), in ONE
        transaction (a re-parse). False when the document no longer exists."""
        ...

    async def without_job(self, kind: str, statuses: Sequence[ParseStatus]) -> builtins.list[Knowledge]:
        """Documents in ``statuses`` with no queued or running job of ``kind`` keyed by their id (left so by
        a crash before the transactional enqueue existed, or a re-parse cut short)."""
        ...

    async def get(self, tenant_id: int | None, knowledge_id: str) -> Knowledge | None:
        """``tenant_id=None`` only for background jobs that carry an id they created themselves."""
        ...

    async def storage_used(self, tenant_id: int) -> int:
        """Bytes of the tenant's stored originals: the sum of its documents' ``file_size`` (one query)."""
        ...

    async def find_duplicate(self, kb_id: str, *, file_hash: str | None = None,
                             source: str | None = None) -> Knowledge | None: ...

    async def list(self, tenant_id: int, kb_id: str, *, page: int, page_size: int,
                   filters: KnowledgeFilter | None = None) -> Page: ...

    async def search(self, tenant_id: int, *, keyword: str, file_types: Sequence[str], offset: int,
                     limit: int) -> Page:
        """The tenant's documents in every knowledge base whose title or file name holds ``keyword`` (all
        when empty), of one of ``file_types`` (any when empty), newest first; FAQ containers are not
        documents and are left out."""
        ...

    async def ids_with_status(self, statuses: Sequence[ParseStatus]) -> builtins.list[str]: ...

    async def update(self, k: Knowledge) -> Knowledge: ...

    async def set_status(self, knowledge_id: str, status: ParseStatus, error_message: str = "",
                         **fields: Any) -> bool:
        """False when the document no longer exists (deleted while being processed)."""
        ...

    async def delete(self, tenant_id: int, knowledge_id: str) -> bool: ...

    async def cancel(self, knowledge_id: str, error_message: str) -> bool:
        """Marks a ``pending`` or ``processing`` document ``cancelled``, in one conditional update; False if
        it was in no such state (a parse that committed first stands)."""
        ...

    async def mark_processing(self, knowledge_ids: Sequence[str]) -> None:
        """pending → processing for many documents in one statement."""
        ...

    async def set_progress(self, knowledge_id: str, progress: IngestProgress | None) -> bool:
        """Records (None: removes) a ``processing`` document's progress in its metadata, leaving the rest of
        the row (and ``updated_at``) as it is; False when the document is not ``processing``."""
        ...


@runtime_checkable
class ChunkRepo(Protocol):
    async def replace_for_knowledge(self, knowledge_id: str, chunks: Sequence[Chunk],
                                    *, complete: dict[str, Any] | None = None) -> list[str] | None:
        """Atomically swaps a document's chunks; with ``complete`` also marks the document completed with
        those fields in the same transaction. Returns the ids of the removed chunks, or None if the document
        is gone."""
        ...

    async def replace_many(self, items: Sequence[tuple[str, Sequence[Chunk], dict[str, Any] | None]]
                           ) -> dict[str, builtins.list[str] | None]:
        """Several documents' swaps in one transaction: knowledge id → removed chunk ids (None: document
        gone)."""
        ...

    async def list(self, tenant_id: int, knowledge_id: str, *, page: int, page_size: int,
                   chunk_types: Sequence[str] | None = None) -> Page: ...

    async def get(self, tenant_id: int, chunk_id: str) -> Chunk | None: ...

    async def update(self, chunk: Chunk) -> Chunk: ...

    async def delete(self, tenant_id: int, chunk_id: str) -> bool: ...

    async def ids_for_knowledge(self, knowledge_id: str) -> builtins.list[str]: ...


@runtime_checkable
class ChunkRevisionRepo(Protocol):
    async def add(self, rev: ChunkRevision) -> None:
        """Keeps ``rev``, replacing one of the same chunk and revision (an edit retried after a failure)."""
        ...

    async def list(self, tenant_id: int, chunk_id: str) -> builtins.list[ChunkRevision]:
        """The chunk's earlier contents, newest first."""
        ...

    async def get(self, tenant_id: int, chunk_id: str, revision: int) -> ChunkRevision | None: ...

    async def for_knowledge(self, tenant_id: int, knowledge_id: str) -> builtins.list[ChunkRevision]:
        """Every revision of a document's chunks (kept across a move, which rewrites the chunk rows)."""
        ...


@runtime_checkable
class KnowledgeBasePinRepo(Protocol):
    async def toggle(self, tenant_id: int, kb_id: str) -> tuple[bool, datetime | None] | None:
        """Pins the tenant's knowledge base, or unpins it if pinned: (pinned, pinned_at); None if the tenant
        has no such knowledge base."""
        ...

    async def pinned(self, tenant_id: int, kb_ids: Sequence[str] | None = None) -> dict[str, datetime]:
        """Knowledge base id → when it was pinned, for the tenant's pinned ones (among ``kb_ids``)."""
        ...


@runtime_checkable
class TagRepo(Protocol):
    async def create(self, tag: Tag) -> Tag: ...

    async def get(self, tenant_id: int, tag_id: str) -> Tag | None: ...

    async def get_by_name(self, kb_id: str, name: str) -> Tag | None: ...

    async def list(self, tenant_id: int, kb_id: str, *, page: int, page_size: int,
                   keyword: str | None = None) -> Page:
        """Items are ``(Tag, knowledge_count, chunk_count)`` tuples."""
        ...

    async def update(self, tag: Tag) -> Tag: ...

    async def delete(self, tenant_id: int, tag_id: str) -> bool: ...

    async def usage(self, tag_id: str) -> tuple[int, int]:
        """(knowledge_count, chunk_count) currently labelled with the tag."""
        ...


@runtime_checkable
class ModelRepo(Protocol):
    async def create(self, m: ModelConfig) -> ModelConfig: ...

    async def get(self, tenant_id: int | None, model_id: str) -> ModelConfig | None: ...

    async def list(self, tenant_id: int, *, type: str | None = None) -> list[ModelConfig]: ...

    async def list_every_tenant(self, *, type: str) -> builtins.list[ModelConfig]:
        """Every tenant's rows of ``type``: the embedder registry's cache at start-up."""
        ...

    async def update(self, m: ModelConfig) -> ModelConfig: ...

    async def delete(self, tenant_id: int, model_id: str) -> bool: ...


@runtime_checkable
class JobRepo(Protocol):
    async def add(self, kind: str, payload: dict[str, Any], key: str | None) -> tuple[str, bool]:
        """(job id, created). With a key that is already queued, returns that job, created False (a running
        job with the key does not block: the new job runs after it, e.g. a re-parse during a parse)."""
        ...

    async def claim_next(self, kinds: Sequence[str], stale_before: datetime) -> JobRecord | None:
        """Marks the oldest queued job (or a running job whose heartbeat is older than ``stale_before``)
        running."""
        ...

    async def claim_batch(self, kinds: Sequence[str], stale_before: datetime, limit: int,
                          finished: Sequence[str] = ()) -> list[JobRecord]:
        """Deletes ``finished`` jobs and claims up to ``limit`` claimable jobs in one transaction."""
        ...

    async def claimable_ids(self, kinds: Sequence[str], stale_before: datetime, limit: int) -> list[str]:
        """Ids of up to ``limit`` claimable jobs, oldest first, without claiming them (a relay publishing the
        table's jobs elsewhere, e.g. to a Redis stream)."""
        ...

    async def claim_ids(self, job_ids: Sequence[str], kinds: Sequence[str],
                        stale_before: datetime) -> list[JobRecord]:
        """Claims those of ``job_ids`` that are claimable (the fence behind a claim made elsewhere: a job
        already running, finished or failed is not claimed again)."""
        ...

    async def finish_many(self, job_ids: Sequence[str]) -> None: ...

    async def heartbeat(self, job_id: str) -> None: ...

    async def finish(self, job_id: str) -> None: ...

    async def fail(self, job_id: str, error: str) -> None: ...

    async def requeue(self, job_id: str, *, refund: bool = False, delay_seconds: float = 0.0) -> None:
        """Back to ``queued``; ``refund`` takes back the attempt its claim counted (the job was stopped, not
        at fault: a shutdown); ``delay_seconds``: not claimed again before then (a retry's backoff)."""
        ...

    async def count_active(self) -> int: ...


@dataclass(frozen=True, slots=True)
class Repositories:
    """The store-api repositories, one per aggregate (``knora/adapters/db/repos`` implements each)."""

    kbs: KnowledgeBaseRepo
    knowledge: KnowledgeRepo
    chunks: ChunkRepo
    tags: TagRepo
    models: ModelRepo
    jobs: JobRepo
    pins: KnowledgeBasePinRepo
    chunk_revisions: ChunkRevisionRepo
