"""Issue 16 item 2: an upload accepted by one Knora process whose job another process runs. With a shared blob
store (S3, PostgreSQL) the second process finds the original and the document completes; with each process's
own local directory it cannot (what 59 of 300 uploads met across independent replicas)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from knora.domain.knowledge import ParseStatus
from knora.services.ingest.service import JOB_KIND
from knora.settings import Settings
from tests.conftest import RECORDING, s3_settings, started, stop_jobs

pytestmark = [pytest.mark.integration, pytest.mark.postgres]

ROOT = Path(__file__).resolve().parents[3]
TEXT = ("A shared original is read by whichever replica runs its job. " * 30).encode()

# The other process: its own data directory, the same database and blob settings; runs the queued jobs, exits.
_WORKER = """
import asyncio, json, sys
from knora.root import build_services
from knora.settings import Settings
from tests.conftest import RECORDING

async def main():
    fields = json.loads(sys.argv[1])
    c = await build_services(Settings(**fields), RECORDING)
    try:
        await c.jobs.wait_idle(120)
    finally:
        await c.aclose()
    print("done", flush=True)

asyncio.run(main())
"""


@pytest.fixture(params=["s3", "postgres", "local"])
def blob_fields(request: pytest.FixtureRequest) -> dict[str, Any]:
    if request.param == "s3":
        return s3_settings(request.getfixturevalue("s3_endpoint"))
    return {"blob_store": request.param}


async def test_a_job_run_by_another_process_finds_the_original(
        make_settings: Callable[..., Settings], fresh_pg_url: str, tmp_path: Path,
        blob_fields: dict[str, Any]) -> None:
    settings = make_settings(database_url=fresh_pg_url, **blob_fields)
    async with started(settings, RECORDING) as accepting:
        await stop_jobs(accepting)  # this process only accepts: the job must be run by the other one
        kb = await accepting.kb_service.create(accepting.default_tenant_id, {"name": "shared"})
        k = await accepting.ingest_service.add_file(accepting.default_tenant_id, kb.id, "shared.md", TEXT)
        assert (await accepting.repos.knowledge.get(None, k.id)).parse_status == ParseStatus.PENDING

        other = {**blob_fields, "data_dir": str(tmp_path / "other"), "database_url": fresh_pg_url,
                 "api_key": settings.api_key, "embedder": "local:hash", "sample_kb": False,
                 "parse_isolation": "thread"}
        if "s3_secret_access_key" in other:
            other["s3_secret_access_key"] = "test"
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-c", _WORKER, json.dumps(other), cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(proc.communicate(), 240)
        assert proc.returncode == 0, err.decode()[-3000:]

        got = await accepting.repos.knowledge.get(None, k.id)
        assert await accepting.repos.knowledge.without_job(JOB_KIND, [ParseStatus.PENDING]) == []
        if blob_fields["blob_store"] == "local":
            assert got.parse_status == ParseStatus.FAILED
            assert "missing from the blob store" in got.error_message
        else:
            assert got.parse_status == ParseStatus.COMPLETED, got.error_message
