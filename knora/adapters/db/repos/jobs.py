"""The durable job table behind the in-process queue.

A claim is an UPDATE guarded by the status it expects, so two workers (or two processes on one database, e.g.
the server and the CLI) never run the same job twice at once. A running job whose heartbeat stopped (its
process died) becomes claimable again once it is stale.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, and_, delete, func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from knora.adapters.db.repos._mapping import SessionFactory, row_to
from knora.adapters.db.tables import JobRow
from knora.domain.common import new_id, utcnow
from knora.ports.store import JobRecord

ACTIVE = ("queued", "running")


def new_job_row(kind: str, payload: dict[str, Any], key: str | None) -> JobRow:
    """A queued job row; other repositories add it to their own transaction (``JobRequest``)."""
    now = utcnow()
    return JobRow(id=new_id(), kind=kind, key=key, payload=payload, status="queued", attempts=0, error="",
                  created_at=now, updated_at=now)


def _claimable(kinds: Sequence[str], stale_before: datetime) -> ColumnElement[bool]:
    """Queued and due (a retry waits for its ``run_after``), or running with a stale heartbeat."""
    due = or_(JobRow.run_after.is_(None), JobRow.run_after <= utcnow())
    return and_(JobRow.kind.in_(list(kinds)), or_(
        and_(JobRow.status == "queued", due),
        and_(JobRow.status == "running", JobRow.updated_at < stale_before)))



async def _claim(s: AsyncSession, rows: Sequence[JobRow], claimable: ColumnElement[bool]) -> list[JobRecord]:
    """Marks these (still claimable) rows running in the open transaction; the ones this process won, in
    ``rows``' order. Another process may claim some in between: the rows that carry our stamp are ours."""
    if not rows:
        return []
    recs = {r.id: row_to(JobRecord, r) for r in rows}
    stamp = utcnow()
    await s.execute(update(JobRow).where(JobRow.id.in_(list(recs)), claimable).values(
        status="running", attempts=JobRow.attempts + 1, updated_at=stamp),
        execution_options={"synchronize_session": False})
    won = {r[0] for r in await s.execute(select(JobRow.id).where(
        JobRow.id.in_(list(recs)), JobRow.status == "running", JobRow.updated_at == stamp))}
    return [recs[i].model_copy(update={"status": "running", "attempts": recs[i].attempts + 1})
            for i in recs if i in won]

class SqlJobRepo:
    def __init__(self, sessions: SessionFactory) -> None:
        self._sessions = sessions

    async def add(self, kind: str, payload: dict[str, Any], key: str | None) -> tuple[str, bool]:
        async with self._sessions.begin() as s:
            if key is not None:
                existing = (await s.execute(select(JobRow.id).where(
                    JobRow.kind == kind, JobRow.key == key, JobRow.status == "queued").limit(1))).first()
                if existing is not None:
                    return str(existing[0]), False
            row = new_job_row(kind, payload, key)
            s.add(row)
            return row.id, True

    async def claim_next(self, kinds: Sequence[str], stale_before: datetime) -> JobRecord | None:
        claimable = _claimable(kinds, stale_before)
        for _ in range(5):
            async with self._sessions.begin() as s:
                row = (await s.execute(select(JobRow).where(claimable).order_by(JobRow.created_at, JobRow.id)
                                       .limit(1))).scalar_one_or_none()
                if row is None:
                    return None
                # before the UPDATE, which refreshes the row object in the session
                rec = row_to(JobRecord, row)
                res = await s.execute(update(JobRow).where(JobRow.id == row.id, claimable).values(
                    status="running", attempts=JobRow.attempts + 1, updated_at=utcnow()),
                    execution_options={"synchronize_session": False})
                if res.rowcount:
                    return rec.model_copy(update={"status": "running", "attempts": rec.attempts + 1})
        return None

    async def claim_batch(self, kinds: Sequence[str], stale_before: datetime, limit: int,
                          finished: Sequence[str] = ()) -> list[JobRecord]:
        """Delete ``finished`` jobs and claim up to ``limit`` jobs, all in ONE transaction: a busy queue then
        costs one write per batch of jobs instead of two per job."""
        claimable = _claimable(kinds, stale_before)
        async with self._sessions.begin() as s:
            if finished:
                await s.execute(delete(JobRow).where(JobRow.id.in_(list(finished))))
            if limit <= 0:
                return []
            rows = (await s.execute(select(JobRow).where(claimable).order_by(JobRow.created_at, JobRow.id)
                                    .limit(limit))).scalars().all()
            return await _claim(s, rows, claimable)

    async def claimable_ids(self, kinds: Sequence[str], stale_before: datetime, limit: int) -> list[str]:
        async with self._sessions() as s:
            rows = await s.execute(select(JobRow.id).where(_claimable(kinds, stale_before))
                                   .order_by(JobRow.created_at, JobRow.id).limit(limit))
            return [str(r[0]) for r in rows]

    async def claim_ids(self, job_ids: Sequence[str], kinds: Sequence[str],
                        stale_before: datetime) -> list[JobRecord]:
        if not job_ids:
            return []
        claimable = and_(JobRow.id.in_(list(job_ids)), _claimable(kinds, stale_before))
        async with self._sessions.begin() as s:
            rows = (await s.execute(select(JobRow).where(claimable))).scalars().all()
            claimed = await _claim(s, rows, claimable)
        order = {job_id: n for n, job_id in enumerate(job_ids)}
        return sorted(claimed, key=lambda r: order[r.id])

    async def finish_many(self, job_ids: Sequence[str]) -> None:
        if job_ids:
            async with self._sessions.begin() as s:
                await s.execute(delete(JobRow).where(JobRow.id.in_(list(job_ids))))

    async def heartbeat(self, job_id: str) -> None:
        async with self._sessions.begin() as s:
            await s.execute(update(JobRow).where(JobRow.id == job_id, JobRow.status == "running")
                            .values(updated_at=utcnow()))

    async def finish(self, job_id: str) -> None:
        async with self._sessions.begin() as s:
            await s.execute(delete(JobRow).where(JobRow.id == job_id))

    async def fail(self, job_id: str, error: str) -> None:
        async with self._sessions.begin() as s:
            await s.execute(update(JobRow).where(JobRow.id == job_id)
                            .values(status="failed", error=error[:4000], updated_at=utcnow()))

    async def requeue(self, job_id: str, *, refund: bool = False, delay_seconds: float = 0.0) -> None:
        attempts = JobRow.attempts - 1 if refund else JobRow.attempts
        now = utcnow()
        run_after = now + timedelta(seconds=delay_seconds) if delay_seconds > 0 else None
        async with self._sessions.begin() as s:
            await s.execute(update(JobRow).where(JobRow.id == job_id, JobRow.status == "running")
                            .values(status="queued", attempts=attempts, updated_at=now, run_after=run_after))

    async def count_active(self) -> int:
        async with self._sessions() as s:
            n = (await s.execute(select(func.count()).select_from(JobRow).where(JobRow.status.in_(ACTIVE))))
            return int(n.scalar_one())
