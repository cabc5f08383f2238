"""Documents ("knowledge") of a knowledge base, with their parse status."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

from sqlalchemy import delete, exists, func, or_, select, update

from knora.adapters.db.repos._mapping import (
    SessionFactory,
    apply,
    clamp_page,
    contains_ci,
    row_to,
    to_row,
)
from knora.adapters.db.repos.jobs import ACTIVE, new_job_row
from knora.adapters.db.tables import ChunkRow, JobRow, KnowledgeRow
from knora.domain.common import utcnow
from knora.domain.knowledge import PROGRESS_KEY, IngestProgress, Knowledge, ParseStatus
from knora.ports.jobs import JobRequest
from knora.ports.store import KnowledgeFilter, Page


class SqlKnowledgeRepo:
    def __init__(self, sessions: SessionFactory) -> None:
        self._sessions = sessions

    async def create(self, k: Knowledge) -> Knowledge:
        async with self._sessions.begin() as s:
            s.add(to_row(KnowledgeRow, k))
        return k

    async def create_with_job(self, k: Knowledge, job: JobRequest) -> Knowledge:
        async with self._sessions.begin() as s:
            s.add(to_row(KnowledgeRow, k))
            s.add(new_job_row(job.kind, job.payload, job.key))
        return k

    async def requeue_with_job(self, knowledge_id: str, job: JobRequest) -> bool:
        async with self._sessions.begin() as s:
            res = await s.execute(update(KnowledgeRow).where(KnowledgeRow.id == knowledge_id).values(
                parse_status=str(ParseStatus.PENDING), error_message="", updated_at=utcnow()))
            if not res.rowcount:
                return False
            queued = (await s.execute(select(JobRow.id).where(
                JobRow.kind == job.kind, JobRow.key == job.key, JobRow.status == "queued").limit(1))).first()
            if queued is None:
                s.add(new_job_row(job.kind, job.payload, job.key))
        return True

    async def without_job(self, kind: str, statuses: Sequence[ParseStatus]) -> builtins.list[Knowledge]:
        has_job = exists().where(JobRow.kind == kind, JobRow.key == KnowledgeRow.id,
                                 JobRow.status.in_(ACTIVE))
        async with self._sessions() as s:
            rows = (await s.execute(select(KnowledgeRow).where(
                KnowledgeRow.parse_status.in_([str(x) for x in statuses]), ~has_job)
                .order_by(KnowledgeRow.created_at))).scalars().all()
            return [row_to(Knowledge, r) for r in rows]

    async def get(self, tenant_id: int | None, knowledge_id: str) -> Knowledge | None:
        async with self._sessions() as s:
            row = await s.get(KnowledgeRow, knowledge_id)
            if row is None or (tenant_id is not None and row.tenant_id != tenant_id):
                return None
            return row_to(Knowledge, row)

    async def storage_used(self, tenant_id: int) -> int:
        async with self._sessions() as s:
            total = (await s.execute(select(func.coalesce(func.sum(KnowledgeRow.file_size), 0))
                                     .where(KnowledgeRow.tenant_id == tenant_id))).scalar_one()
            return int(total)

    async def find_duplicate(self, kb_id: str, *, file_hash: str | None = None,
                             source: str | None = None) -> Knowledge | None:
        q = select(KnowledgeRow).where(KnowledgeRow.knowledge_base_id == kb_id)
        if file_hash:
            q = q.where(KnowledgeRow.file_hash == file_hash)
        elif source:
            q = q.where(KnowledgeRow.type == "url", KnowledgeRow.source == source)
        else:
            return None
        async with self._sessions() as s:
            row = (await s.execute(q.order_by(KnowledgeRow.created_at).limit(1))).scalar_one_or_none()
            return row_to(Knowledge, row) if row else None

    async def list(self, tenant_id: int, kb_id: str, *, page: int, page_size: int,
                   filters: KnowledgeFilter | None = None) -> Page:
        page, page_size = clamp_page(page, page_size)
        conds: list[Any] = [KnowledgeRow.tenant_id == tenant_id, KnowledgeRow.knowledge_base_id == kb_id]
        f = filters or KnowledgeFilter()
        if f.tag_id:
            conds.append(KnowledgeRow.tag_id == f.tag_id)
        if f.file_type:
            conds.append(KnowledgeRow.file_type == f.file_type.lower().lstrip("."))
        if f.parse_status:
            conds.append(KnowledgeRow.parse_status == f.parse_status)
        if f.source:
            conds.append(KnowledgeRow.type == f.source)
        if f.keyword:
            conds.append(or_(contains_ci(KnowledgeRow.title, f.keyword),
                             contains_ci(KnowledgeRow.file_name, f.keyword)))
        async with self._sessions() as s:
            total = (await s.execute(select(func.count()).select_from(KnowledgeRow)
                                     .where(*conds))).scalar_one()
            rows = (await s.execute(select(KnowledgeRow).where(*conds)
                                    .order_by(KnowledgeRow.created_at.desc(), KnowledgeRow.id)
                                    .offset((page - 1) * page_size).limit(page_size))).scalars().all()
            return Page(items=[row_to(Knowledge, r) for r in rows], total=int(total))

    async def search(self, tenant_id: int, *, keyword: str, file_types: Sequence[str], offset: int,
                     limit: int) -> Page:
        # an FAQ knowledge base's entries hang off one container row (type "faq"), which is not a file
        conds: list[Any] = [KnowledgeRow.tenant_id == tenant_id, KnowledgeRow.type != "faq"]
        if keyword:
            conds.append(or_(contains_ci(KnowledgeRow.title, keyword),
                             contains_ci(KnowledgeRow.file_name, keyword)))
        if file_types:
            conds.append(KnowledgeRow.file_type.in_([t.lower().lstrip(".") for t in file_types]))
        async with self._sessions() as s:
            total = (await s.execute(select(func.count()).select_from(KnowledgeRow)
                                     .where(*conds))).scalar_one()
            rows = (await s.execute(select(KnowledgeRow).where(*conds)
                                    .order_by(KnowledgeRow.created_at.desc(), KnowledgeRow.id)
                                    .offset(offset).limit(limit))).scalars().all()
            return Page(items=[row_to(Knowledge, r) for r in rows], total=int(total))

    async def ids_with_status(self, statuses: Sequence[ParseStatus]) -> builtins.list[str]:
        async with self._sessions() as s:
            rows = await s.execute(select(KnowledgeRow.id).where(
                KnowledgeRow.parse_status.in_([str(x) for x in statuses])))
            return [r[0] for r in rows]

    async def update(self, k: Knowledge) -> Knowledge:
        k = k.model_copy(update={"updated_at": utcnow()})
        async with self._sessions.begin() as s:
            row = await s.get(KnowledgeRow, k.id)
            if row is None:
                raise LookupError(k.id)
            apply(row, k)
        return k

    async def set_status(self, knowledge_id: str, status: ParseStatus, error_message: str = "",
                         **fields: Any) -> bool:
        values: dict[str, Any] = {"parse_status": str(status), "error_message": error_message[:2000],
                                  "updated_at": utcnow()}
        for key, value in fields.items():
            values["metadata_" if key == "metadata" else key] = value
        async with self._sessions.begin() as s:
            res = await s.execute(update(KnowledgeRow).where(KnowledgeRow.id == knowledge_id)
                                  .values(**values))
            return bool(res.rowcount)

    async def cancel(self, knowledge_id: str, error_message: str) -> bool:
        async with self._sessions.begin() as s:
            res = await s.execute(update(KnowledgeRow).where(
                KnowledgeRow.id == knowledge_id,
                KnowledgeRow.parse_status.in_([str(ParseStatus.PENDING), str(ParseStatus.PROCESSING)]))
                .values(parse_status=str(ParseStatus.CANCELLED), error_message=error_message,
                        updated_at=utcnow()))
            return bool(res.rowcount)

    async def mark_processing(self, knowledge_ids: Sequence[str]) -> None:
        if not knowledge_ids:
            return
        async with self._sessions.begin() as s:
            await s.execute(update(KnowledgeRow).where(
                KnowledgeRow.id.in_(list(knowledge_ids)),
                KnowledgeRow.parse_status == str(ParseStatus.PENDING))
                .values(parse_status=str(ParseStatus.PROCESSING), error_message="", updated_at=utcnow()))

    async def set_progress(self, knowledge_id: str, progress: IngestProgress | None) -> bool:
        async with self._sessions.begin() as s:
            # locked (PostgreSQL) so that a concurrent metadata write is not lost; SQLite serialises writers
            row = (await s.execute(select(KnowledgeRow).where(KnowledgeRow.id == knowledge_id)
                                   .with_for_update())).scalar_one_or_none()
            if row is None or row.parse_status != str(ParseStatus.PROCESSING):
                return False
            metadata = dict(row.metadata_ or {})
            if progress is None:
                if metadata.pop(PROGRESS_KEY, None) is None:
                    return True
            else:
                metadata[PROGRESS_KEY] = progress.model_dump(mode="json")
            # a JSON column is compared, not tracked: assigning a new dict is what marks it changed; the
            # explicit updated_at keeps onupdate from moving it (progress is not a change of the document)
            await s.execute(update(KnowledgeRow).where(KnowledgeRow.id == knowledge_id)
                            .values(metadata_=metadata, updated_at=row.updated_at))
            return True

    async def delete(self, tenant_id: int, knowledge_id: str) -> bool:
        async with self._sessions.begin() as s:
            row = await s.get(KnowledgeRow, knowledge_id)
            if row is None or row.tenant_id != tenant_id:
                return False
            await s.execute(delete(ChunkRow).where(ChunkRow.knowledge_id == knowledge_id))
            await s.delete(row)
        return True
