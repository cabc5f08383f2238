"""``kill -9`` of a real ``knora serve`` while it parses a hostile file, then a restart (issue 20, 4e).

Before, the restarted server took the dead one's job over and parsed the bomb again, on every restart. Now the
parse worker dies with its server (no orphan keeps burning a core), and a job started more than
``ingest_max_attempts`` times without finishing ends the document as ``failed`` with the reason.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import httpx
import psutil
import pytest

from tests.conftest import TEST_API_KEY
from tests.fakes import bombs
from tests.services.streaming.test_replicas import free_port, wait_healthy

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(120)]

T = TypeVar("T")


def serve(data_dir: Path) -> tuple[subprocess.Popen[bytes], httpx.Client]:
    port = free_port()
    env = {**os.environ, "KNORA_DATA_DIR": str(data_dir), "KNORA_API_KEY": TEST_API_KEY,
           "KNORA_EMBEDDER": "local:hash", "KNORA_SAMPLE_KB": "false", "KNORA_LOG_LEVEL": "WARNING",
           "KNORA_PARSE_TIMEOUT_SECONDS": "300", "KNORA_INGEST_MAX_ATTEMPTS": "1",
           "KNORA_JOB_LEASE_SECONDS": "1"}
    proc = subprocess.Popen([sys.executable, "-c", "from knora.cli.main import main; main()", "serve",
                             "--port", str(port)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    wait_healthy(proc, url)
    return proc, httpx.Client(base_url=url + "/api/v1", headers={"X-API-Key": TEST_API_KEY}, timeout=30)


def poll(check: Callable[[], T], timeout: float = 60.0) -> T:
    """The first truthy ``check()``, or its last value after ``timeout`` (the caller's assert then fails)."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.05)


def test_a_server_killed_mid_parse_does_not_resume_the_bomb_forever(tmp_path: Path) -> None:
    first, api = serve(tmp_path)
    try:
        kb = api.post("/knowledge-bases", json={"name": "bombs"}).json()["data"]["id"]
        pdf = bombs.pdf_shared_stream(pages=200, stream_bytes=2 << 20)
        kid = api.post(f"/knowledge-bases/{kb}/knowledge/file",
                       files={"file": ("pages.pdf", pdf)}).json()["data"]["id"]
        workers = poll(lambda: [p for p in psutil.Process(first.pid).children()
                                if "knora.adapters.parsers.worker" in " ".join(p.cmdline())])
        assert workers, "no parser worker started"
        first.kill()  # kill -9: no clean-up of any kind
        first.wait(timeout=20)
        _, alive = psutil.wait_procs(workers, timeout=20)
        assert alive == []  # the worker died with its server instead of parsing on as an orphan
    finally:
        if first.poll() is None:
            first.kill()
        api.close()

    second, api = serve(tmp_path)
    try:
        def ended() -> dict[str, str] | None:
            k: dict[str, str] = api.get(f"/knowledge/{kid}").json()["data"]
            return k if k["parse_status"] == "failed" else None

        k = poll(ended)
        assert k is not None, "the document was not ended"
        assert k["error_message"].startswith("Ingestion stopped: it was started 1 time and each time the "
                                             "process running it ended before it finished"), k
        assert not [p for p in psutil.Process(second.pid).children()
                    if "knora.adapters.parsers.worker" in " ".join(p.cmdline())]  # nothing parses it again
    finally:
        second.kill()
        second.wait(timeout=20)
        api.close()
