"""Small hostile files against a real ``knora serve`` process (issue 20, item 4e).

Starts the server on a fresh data dir and uploads, one after another:
- a 1 GiB-expanding DOCX whose zip headers claim 4 KB: peak RSS of the server and its children while it is
  processed, and how it ended;
- an honest DOCX of ~50 MB XML: seconds until it ends (capped at ``--cap``);
- a PDF of 5,000 pages sharing one 6 MB content stream: seconds a DELETE takes while it is processing.
The slowest ``/health`` answer seen during all of it says whether the server stayed responsive.

    python benchmarks/parse_bombs.py [--cap 120]

Prints one JSON line.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.fakes import bombs

KEY = "sk-bench-bombs"
FINAL = ("completed", "failed")


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Sampler(threading.Thread):
    """Peak RSS of the server process tree, and the slowest /health answer, every 50 ms."""

    def __init__(self, pid: int, url: str) -> None:
        super().__init__(daemon=True)
        self.proc = psutil.Process(pid)
        self.url = url
        self.peak = 0
        self.slowest_health = 0.0
        self.stop = threading.Event()

    def rss(self) -> int:
        total = 0
        for p in [self.proc, *self.proc.children(recursive=True)]:
            with contextlib.suppress(psutil.Error):
                total += p.memory_info().rss
        return total

    def run(self) -> None:
        with httpx.Client(timeout=120) as http:
            while not self.stop.is_set():
                self.peak = max(self.peak, self.rss())
                t = time.perf_counter()
                with contextlib.suppress(httpx.HTTPError):
                    http.get(self.url + "/health")
                self.slowest_health = max(self.slowest_health, time.perf_counter() - t)
                time.sleep(0.05)


def _wait_final(api: httpx.Client, kid: str, cap: float) -> tuple[str, str, float]:
    t = time.perf_counter()
    while time.perf_counter() - t < cap:
        k = api.get(f"/knowledge/{kid}").json()["data"]
        if k["parse_status"] in FINAL:
            return k["parse_status"], k.get("error_message", ""), time.perf_counter() - t
        time.sleep(0.2)
    return "still processing", "", time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cap", type=float, default=120.0, help="seconds to wait for one document")
    args = ap.parse_args()
    lying, xml, pdf = bombs.lying_docx(), bombs.xml_docx(), bombs.pdf_shared_stream()
    port = _port()
    url = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "KNORA_DATA_DIR": tmp, "KNORA_API_KEY": KEY, "KNORA_EMBEDDER": "local:hash",
               "KNORA_SAMPLE_KB": "false", "KNORA_LOG_LEVEL": "WARNING"}
        server = subprocess.Popen([sys.executable, "-c", "from knora.cli.main import main; main()", "serve",
                                   "--port", str(port)], env=env, stdout=subprocess.DEVNULL)
        try:
            for _ in range(600):
                try:
                    if httpx.get(url + "/health", timeout=1).status_code == 200:
                        break
                except httpx.HTTPError:
                    time.sleep(0.1)
            sampler = Sampler(server.pid, url)
            base_rss = sampler.rss()
            sampler.start()
            out: dict[str, Any] = {"load_avg": os.getloadavg()[0], "rss_start_mb": base_rss >> 20}
            with httpx.Client(base_url=url + "/api/v1", headers={"X-API-Key": KEY}, timeout=args.cap) as api:
                kb = api.post("/knowledge-bases", json={"name": "bombs"}).json()["data"]["id"]

                def upload(name: str, data: bytes) -> str:
                    r = api.post(f"/knowledge-bases/{kb}/knowledge/file", files={"file": (name, data)})
                    return str(r.json()["data"]["id"])

                kid = upload("lying.docx", lying)
                status, reason, secs = _wait_final(api, kid, args.cap)
                out.update(lying_docx_peak_rss_mb=sampler.peak >> 20, lying_docx_status=status,
                           lying_docx_reason=reason[:120], lying_docx_seconds=round(secs, 1))
                kid = upload("xml.docx", xml)
                status, reason, secs = _wait_final(api, kid, args.cap)
                out.update(xml_docx_status=status, xml_docx_reason=reason[:120],
                           xml_docx_seconds=round(secs, 1))
                kid = upload("pages.pdf", pdf)
                while api.get(f"/knowledge/{kid}").json()["data"]["parse_status"] == "pending":
                    time.sleep(0.1)
                time.sleep(1.0)  # well into the parse
                t = time.perf_counter()
                try:
                    code: int | str = api.delete(f"/knowledge/{kid}").status_code
                except httpx.TimeoutException:
                    code = "timeout"
                out.update(delete_processing_seconds=round(time.perf_counter() - t, 2), delete_status=code)
            sampler.stop.set()
            sampler.join()
            out.update(peak_rss_mb=sampler.peak >> 20,
                       slowest_health_seconds=round(sampler.slowest_health, 2))
            print(json.dumps(out))
        finally:
            for child in psutil.Process(server.pid).children(recursive=True):
                child.kill()
            server.kill()
            server.wait()


if __name__ == "__main__":
    main()
