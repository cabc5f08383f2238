"""``knora blobs migrate`` (issue 16): knowledge bases made on one server with local files, their originals
moved into a shared store — S3 (moto's server) with SQLite, PostgreSQL's tables (127.0.0.1:5432, a fresh
database) — verified, rebound, and the command rerun after a crash half way."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from knora.adapters.blobs.postgres import PostgresBlobStore
from knora.adapters.blobs.s3 import S3BlobStore
from knora.adapters.secrets.fernet import new_key
from knora.cli.main import main
from knora.cli.serve import _bindings_allow
from knora.settings import Settings
from tests.cli.test_server_mode import _env
from tests.conftest import RECORDING, s3_settings, started

pytestmark = pytest.mark.integration

FILES = {"guide.md": b"# Guide\n\nReplicas share the originals. " * 40,
         "notes.txt": "Des notes, 笔记, заметки. ".encode() * 50,
         "empty-ish.csv": b"a,b\n1,2\n"}


async def _one_server(settings: Settings) -> dict[str, bytes]:
    """Two knowledge bases with documents (and a parsed image's blob) on the local store; the keys and
    bytes stored."""
    stored: dict[str, bytes] = {}
    images: list[str] = []
    async with started(settings, RECORDING) as c:
        tenant = c.default_tenant_id
        for kb_name in ("handbook", "notes"):
            kb = await c.kb_service.create(tenant, {"name": kb_name})
            for name, data in FILES.items():
                k = await c.ingest_service.add_file(tenant, kb.id, f"{kb_name}-{name}", data)
                stored[k.file_path] = data
            images.append(f"{tenant}/{kb.id}/{k.id}/images/0.png")
        await c.jobs.wait_idle(120)
        for image in images:  # after the parse, which replaces a document's images with its own
            stored[image] = b"\x89PNG image " + image.encode()
            await c.blobs.put(image, stored[image])
    return stored


async def _served_from_target(settings: Settings, stored: dict[str, bytes], kind: str) -> None:
    """A server on the target store reads every original and sees the knowledge bases bound to it."""
    async with started(settings, RECORDING) as c:
        for key, data in stored.items():
            assert await c.blobs.get(key) == data
        kbs = await c.kb_service.list(c.default_tenant_id)
        assert {kb.storage_provider_config.provider for kb in kbs if kb.storage_provider_config} == {kind}
        assert {kb.storage_backend_id for kb in kbs} == {f"builtin-{kind}"}


def _report(capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    out = capsys.readouterr().out.strip().splitlines()
    return json.loads(out[-1])


def _target(kind: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The target store's settings, set in the environment as an operator would."""
    if kind == "s3":
        fields = s3_settings(request.getfixturevalue("s3_endpoint"))
    else:
        fields = {"blob_store": "postgres", "database_url": request.getfixturevalue("fresh_pg_url")}
    for name, value in fields.items():
        monkeypatch.setenv(f"KNORA_{name.upper()}", str(value).lower() if isinstance(value, bool) else value)
    return fields


@pytest.mark.parametrize("kind", ["s3", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_migrate_copies_verifies_rebinds_and_resumes(
        kind: str, env: Path, make_settings: Callable[..., Settings], request: pytest.FixtureRequest,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("KNORA_BLOB_STORE", "local")
    database = {"database_url": request.getfixturevalue("fresh_pg_url")} if kind == "postgres" else {}
    if database:
        monkeypatch.setenv("KNORA_DATABASE_URL", database["database_url"])
    stored = asyncio.run(_one_server(make_settings(**database)))
    capsys.readouterr()

    # the same store on both sides is refused, before anything is opened
    assert main(["blobs", "migrate"]) == 2
    assert "nothing to migrate: KNORA_BLOB_STORE=local is the store to copy from" in capsys.readouterr().err

    fields = {**_target(kind, request, monkeypatch), **database}
    # a crash half way: the target store fails on its fourth write
    store_cls: Any = S3BlobStore if kind == "s3" else PostgresBlobStore
    real_put = store_cls.put
    written: list[str] = []

    async def failing_put(self: Any, key: str, data: bytes) -> str:
        if len(written) == 3:
            raise ConnectionError("the store went away")
        written.append(key)
        return await real_put(self, key, data)

    monkeypatch.setattr(store_cls, "put", failing_put)
    with pytest.raises(ConnectionError):
        main(["blobs", "migrate", "--json"])
    monkeypatch.setattr(store_cls, "put", real_put)
    capsys.readouterr()

    assert main(["blobs", "migrate", "--json"]) == 0
    report = _report(capsys)
    assert report["knowledge_bases"] == 2
    assert report["rebound"] == 2
    assert report["objects_present"] == 3  # what the first run had written before it failed
    assert report["objects_copied"] == len(stored) - 3
    assert report["bytes_copied"] == sum(len(v) for k, v in stored.items() if k not in written)
    assert (report["missing"], report["not_rebound"]) == ([], [])

    # rerun: nothing left to do
    assert main(["blobs", "migrate", "--json"]) == 0
    again = _report(capsys)
    assert (again["knowledge_bases"], again["already_bound"], again["objects_copied"]) == (0, 2, 0)

    asyncio.run(_served_from_target(make_settings(**fields), stored, kind))
    # the source is left as it was
    assert all((env / "blobs" / key).read_bytes() == data for key, data in stored.items())


def test_missing_originals_block_rebinding_unless_allowed(
        env: Path, make_settings: Callable[..., Settings], request: pytest.FixtureRequest,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    stored = asyncio.run(_one_server(make_settings()))
    lost = next(k for k in sorted(stored) if "/images/" not in k)
    (env / "blobs" / lost).unlink()
    _target("s3", request, monkeypatch)
    capsys.readouterr()

    assert main(["blobs", "migrate", "--dry-run", "--json"]) == 1
    dry = _report(capsys)
    assert (dry["objects_copied"], dry["rebound"], dry["missing"]) == (len(stored) - 1, 0, [lost])

    assert main(["blobs", "migrate", "--json"]) == 1
    out = capsys.readouterr()
    report = json.loads(out.out.strip().splitlines()[-1])
    assert (report["rebound"], report["missing"], len(report["not_rebound"])) == (1, [lost], 1)
    assert "left bound to local" in out.err

    assert main(["blobs", "migrate", "--allow-missing", "--json"]) == 0
    report = _report(capsys)
    assert (report["knowledge_bases"], report["rebound"], report["already_bound"]) == (1, 1, 1)
    assert report["objects_copied"] == 0


def test_a_missing_source_directory_is_refused(env: Path, request: pytest.FixtureRequest,
                                               monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    _target("s3", request, monkeypatch)
    assert main(["blobs", "migrate", "--source-dir", str(env / "nowhere")]) == 2
    assert "is not a directory: pass --source-dir" in capsys.readouterr().err
    assert main(["blobs", "migrate", "--from", "s3"]) == 2
    assert "KNORA_BLOB_STORE=s3 is the store to copy from" in capsys.readouterr().err


@pytest.mark.postgres
def test_serve_refuses_several_replicas_until_the_originals_are_moved(
        env: Path, make_settings: Callable[..., Settings], fresh_pg_url: str, request: pytest.FixtureRequest,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    asyncio.run(_one_server(make_settings(database_url=fresh_pg_url)))
    replicas = {"KNORA_DATABASE_URL": fresh_pg_url, "KNORA_REPLICAS": "3", "KNORA_BLOB_STORE": "postgres",
                "KNORA_SECRET_KEY": new_key(), "KNORA_EMBEDDER": "local:hash"}
    proc = subprocess.run([sys.executable, "-m", "knora.cli.main", "serve", "--port", "0"],
                          env=_env(env, **replicas), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "refusing to start several replicas" in proc.stderr
    assert "(2 to local)" in proc.stderr
    assert "Run `knora blobs migrate --from local` with these settings" in proc.stderr
    assert not (env / "server.json").exists()

    for name, value in replicas.items():
        monkeypatch.setenv(name, value)
    assert main(["blobs", "migrate"]) == 0
    assert "2 rebound" in capsys.readouterr().out
    assert asyncio.run(_bindings_allow(Settings()))  # what serve asks first now lets it start


def test_one_server_on_another_store_starts_with_a_warning(
        env: Path, make_settings: Callable[..., Settings], s3_endpoint: str) -> None:
    asyncio.run(_one_server(make_settings()))
    fields = {f"KNORA_{k.upper()}": str(v).lower() if isinstance(v, bool) else str(v)
              for k, v in s3_settings(s3_endpoint).items()}
    proc = subprocess.Popen([sys.executable, "-m", "knora.cli.main", "serve", "--port", "0"],
                            env=_env(env, KNORA_EMBEDDER="local:hash", **fields), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not (env / "server.json").exists():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "no server.json within 120 s"
            time.sleep(0.1)
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=60)
    assert "knora serve: WARNING: knowledge bases are bound to another blob store" in err
    assert "(2 to local)" in err
