"""Progress of knowledge-base background tasks (copy), in WeKnora's ``KBCloneProgress`` shape.

Kept as one small JSON record per task in the blob store, under the tenant's id: it is written by whichever
worker (process or replica) runs the job and read by whichever serves the progress route, and it survives a
restart as the job does. Another tenant's task id is simply not found.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from knora.ports.blobs import BlobStore
from knora.ports.jobs import JobQueue

TaskStatus = Literal["pending", "processing", "completed", "failed"]


class KBTaskProgress(BaseModel):
    """WeKnora's ``KBCloneProgress`` (``created_at``/``updated_at`` are Unix seconds there) plus the
    source → copy map a resumed job uses to skip finished documents."""

    task_id: str
    source_id: str
    target_id: str
    status: TaskStatus = "pending"
    progress: int = 0
    total: int = 0
    processed: int = 0
    message: str = ""
    error: str = ""
    created_at: int = Field(default_factory=lambda: int(time.time()))
    updated_at: int = Field(default_factory=lambda: int(time.time()))
    failed: int = 0
    mode: str = ""  # a move's: reuse_vectors | reparse
    knowledge_ids: list[str] = Field(default_factory=list)  # a move's documents
    copied: dict[str, str] = Field(default_factory=dict)  # source knowledge id → its copy (done)
    started: dict[str, str] = Field(default_factory=dict)  # source knowledge id → copy being written

    def public(self) -> dict[str, object]:
        """As ``KBCloneProgress``."""
        out = self.model_dump(exclude={"copied", "started", "failed", "mode", "knowledge_ids"})
        if not self.error:
            out.pop("error")  # ``omitempty`` in WeKnora
        return out

    def public_move(self) -> dict[str, object]:
        """As ``KnowledgeMoveProgress`` (its knowledge bases are ``source_kb_id``/``target_kb_id``)."""
        out = self.model_dump(exclude={"copied", "started", "knowledge_ids", "source_id", "target_id"})
        return {"task_id": self.task_id, "source_kb_id": self.source_id, "target_kb_id": self.target_id,
                **{k: v for k, v in out.items() if k != "task_id"}}


class TaskProgressStore:
    def __init__(self, blobs: BlobStore, kind: str) -> None:
        self._blobs = blobs
        self._kind = kind

    def _key(self, tenant_id: int, task_id: str) -> str:
        return f"tasks/{self._kind}/{tenant_id}/{task_id}.json"

    async def save(self, tenant_id: int, p: KBTaskProgress) -> None:
        p.updated_at = int(time.time())
        if p.total:
            p.progress = min(100, p.processed * 100 // p.total)
        await self._blobs.put(self._key(tenant_id, p.task_id), p.model_dump_json().encode())

    async def get(self, tenant_id: int, task_id: str) -> KBTaskProgress | None:
        if not task_id or "/" in task_id or ".." in task_id:
            return None
        with contextlib.suppress(Exception):
            data = await self._blobs.get(self._key(tenant_id, task_id))
            with contextlib.suppress(ValidationError):
                return KBTaskProgress.model_validate_json(data)
        return None

    # --- the task lifecycle every knowledge-base job shares (copy, move, rebuild) ---------------------------
    async def queue(self, jobs: JobQueue, tenant_id: int, p: KBTaskProgress) -> KBTaskProgress:
        """Records the task and queues its job (kind = this store's kind, one job per task)."""
        await self.save(tenant_id, p)
        await jobs.enqueue(self._kind, {"tenant_id": tenant_id, "task_id": p.task_id},
                           key=f"{self._kind}:{p.task_id}")
        return p

    async def open(self, payload: dict[str, Any]) -> tuple[int, KBTaskProgress] | None:
        """The job's tenant and task record, or None when there is nothing left to do (the record is gone or
        the task already ended)."""
        tenant_id, task_id = int(payload["tenant_id"]), str(payload["task_id"])
        p = await self.get(tenant_id, task_id)
        if p is None or p.status in ("completed", "failed"):
            return None
        return tenant_id, p

    async def fail(self, tenant_id: int, p: KBTaskProgress, error: str, message: str) -> None:
        p.status, p.error, p.message = "failed", error, message
        await self.save(tenant_id, p)

    async def give_up(self, payload: dict[str, Any], reason: str, message: str) -> None:
        """The job system gave up on the job (attempts exhausted): its task ends failed with the reason."""
        opened = await self.open(payload)
        if opened is not None:
            await self.fail(*opened, reason, message)
