"""Issue 20 item 10: a document row and its ingestion job are committed together, on both databases, and a
document left without a job by an older version (or a re-parse cut short) is queued again at start-up."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError

from knora.adapters.db.repos import knowledge as knowledge_repo
from knora.adapters.db.tables import JobRow, KnowledgeRow
from knora.domain.common import new_id, utcnow
from knora.domain.knowledge import Knowledge, ParseStatus
from knora.root import build_services
from knora.services.ingest.service import JOB_KIND
from knora.settings import Settings
from tests.conftest import RECORDING, started, stop_jobs

pytestmark = pytest.mark.integration

TEXT = ("Knora keeps a document and its job together. " * 20).encode()


async def _count(c: Any, table: Any) -> int:
    async with c.sessions() as s:
        return int((await s.execute(select(func.count()).select_from(table))).scalar_one())


def _broken_job_row(kind: str, payload: dict[str, Any], key: str | None) -> JobRow:
    """A job row the database refuses (NOT NULL kind): the failure happens inside the shared transaction."""
    now = utcnow()
    return JobRow(id=new_id(), kind=None, key=key, payload=payload, status="queued", attempts=0, error="",
                  created_at=now, updated_at=now)


async def test_a_failed_job_insert_leaves_neither_row_and_a_reupload_works(
        container: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    c = container
    kb = await c.kb_service.create(c.default_tenant_id, {"name": "atomic"})
    docs, jobs = await _count(c, KnowledgeRow), await _count(c, JobRow)
    with monkeypatch.context() as m:
        m.setattr(knowledge_repo, "new_job_row", _broken_job_row)
        with pytest.raises(IntegrityError):
            await c.ingest_service.add_file(c.default_tenant_id, kb.id, "guide.md", TEXT)
    assert await _count(c, KnowledgeRow) == docs
    assert await _count(c, JobRow) == jobs
    assert not list((c.settings.data_dir / "blobs").rglob("guide.md"))  # no blob without a row

    k = await c.ingest_service.add_file(c.default_tenant_id, kb.id, "guide.md", TEXT)  # no 409
    await c.jobs.wait_idle(30)
    got = await c.repos.knowledge.get(None, k.id)
    assert got.parse_status == ParseStatus.COMPLETED, got.error_message


async def test_a_document_without_a_job_is_queued_again_at_start(make_settings: Callable[..., Settings],
                                                                  db_url: str) -> None:
    settings = make_settings(database_url=db_url)
    first = await build_services(settings, RECORDING)
    await stop_jobs(first)
    tid = first.default_tenant_id
    kb = await first.kb_service.create(tid, {"name": "stuck"})
    # As an older version could leave it: the row and the blob, but the job never written.
    stuck = Knowledge(tenant_id=tid, knowledge_base_id=kb.id, type="file", title="stuck", source="stuck.md",
                      file_name="stuck.md", file_type="md", file_size=len(TEXT))
    stuck.file_path = await first.blobs.put(f"{tid}/{kb.id}/{stuck.id}/stuck.md", TEXT)
    await first.repos.knowledge.create(stuck)
    # Its original gone as well: must end failed with a reason, not stay pending.
    lost = Knowledge(tenant_id=tid, knowledge_base_id=kb.id, type="file", title="lost", source="lost.md",
                     file_name="lost.md", file_type="md", file_size=3, file_path=f"{tid}/{kb.id}/x/lost.md")
    await first.repos.knowledge.create(lost)
    draft = await first.ingest_service.add_manual(tid, kb.id, "draft", "not indexed yet", status="draft")
    assert [k.id for k in await first.repos.knowledge.without_job(JOB_KIND, [ParseStatus.PENDING])
            if k.id != draft.id] == [stuck.id, lost.id]
    await first.aclose()

    async with started(settings, RECORDING) as second:
        await asyncio.sleep(0)
        await second.jobs.wait_idle(30)
        got = await second.repos.knowledge.get(None, stuck.id)
        assert got.parse_status == ParseStatus.COMPLETED, got.error_message
        gone = await second.repos.knowledge.get(None, lost.id)
        assert gone.parse_status == ParseStatus.FAILED
        assert "missing" in gone.error_message
        assert (await second.repos.knowledge.get(None, draft.id)).parse_status == ParseStatus.PENDING
        # nothing is left waiting for a job that will never come, except the draft (pending by design)
        assert await second.repos.knowledge.without_job(JOB_KIND, [ParseStatus.PENDING]) == [
            await second.repos.knowledge.get(None, draft.id)]


_CRASH_SCRIPT = """
import asyncio, os, signal, sys
from sqlalchemy import event
from knora.adapters.db.tables import JobRow
from knora.root import build_services
from knora.settings import Settings
from tests.conftest import RECORDING

@event.listens_for(JobRow, "after_insert")
def _die(*_args):  # the job's INSERT has run, after the document's; nothing is committed yet
    os.kill(os.getpid(), signal.SIGKILL)

async def main():
    c = await build_services(Settings(data_dir=sys.argv[1], database_url=sys.argv[2], api_key="sk-crash",
                                      embedder="local:hash", sample_kb=False), RECORDING)
    await c.ingest_service.add_file(c.default_tenant_id, sys.argv[3], "guide.md", sys.argv[4].encode())

asyncio.run(main())
"""


async def test_kill_9_during_an_upload_leaves_no_stuck_document(make_settings: Callable[..., Settings],
                                                                db_url: str) -> None:
    """A real process killed with SIGKILL as the job is written: after a restart there is neither a document
    nor a job, and the same file uploads (and completes) without a 409. (Before, the document was already
    committed on its own at that point: a ``pending`` document with no job, and a 409 on re-upload.)"""
    settings = make_settings(database_url=db_url, api_key="sk-crash")
    async with started(settings, RECORDING) as first:
        kb = await first.kb_service.create(first.default_tenant_id, {"name": "crash"})
    root = Path(__file__).resolve().parents[3]
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _CRASH_SCRIPT, str(settings.data_dir), settings.database_url, kb.id,
        TEXT.decode(), cwd=root, env={**os.environ, "PYTHONPATH": str(root)})
    assert await asyncio.wait_for(proc.wait(), 120) == -signal.SIGKILL
    async with started(settings, RECORDING) as second:
        assert await _count(second, KnowledgeRow) == 0
        assert await _count(second, JobRow) == 0
        k = await second.ingest_service.add_file(second.default_tenant_id, kb.id, "guide.md", TEXT)
        await second.jobs.wait_idle(30)
        got = await second.repos.knowledge.get(None, k.id)
        assert got.parse_status == ParseStatus.COMPLETED, got.error_message
