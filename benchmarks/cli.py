"""The CLI next to a running server: ``knora kb list`` wall time and ``knora ask`` time to first output, over
the server's API (the default when a server is up) vs ``--in-process`` (what every command did before), side
by side in one run.

A real ``knora serve`` (subprocess, free port, fresh data dir, ``--embedder``) gets one small document; each
round then runs, alternating, ``knora kb list`` both ways and ``knora ask`` both ways as subprocesses (wall
time from spawn to exit, and to the first byte on stdout), and asks the server the same question directly
with a warm httpx client (time to its first ``answer`` frame: "the server's first token"). ``ask_overhead_s``
is the CLI's first output minus the server's first token: the cost of the CLI itself. Prints one JSON line.

    python benchmarks/cli.py [--embedder local:hash] [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
QUESTION = "What is the first letter of the Greek alphabet?"


def _env(data_dir: Path, embedder: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KNORA_")}
    env.update({"KNORA_DATA_DIR": str(data_dir), "KNORA_EMBEDDER": embedder, "KNORA_SAMPLE_KB": "false",
                "KNORA_LOG_LEVEL": "WARNING", "PYTHONPATH": str(ROOT)})
    return env


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(seconds to the first stdout byte, seconds to exit)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdout is not None
    proc.stdout.read(1)
    first = time.perf_counter() - start
    proc.stdout.read()
    if proc.wait() != 0:
        raise SystemExit(f"{' '.join(cmd)} failed")
    return first, time.perf_counter() - start


def server_first_token(api: httpx.Client) -> float:
    session = api.post("/sessions", json={}).json()["data"]["id"]
    start = time.perf_counter()
    with api.stream("POST", f"/knowledge-chat/{session}", json={"query": QUESTION}) as r:
        for line in r.iter_lines():
            if line.startswith("data:") and json.loads(line[5:]).get("response_type") == "answer":
                return time.perf_counter() - start
    raise SystemExit("no answer frame")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--embedder", default="local:hash")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    knora = [sys.executable, "-m", "knora.cli.main"]
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp) / "data"
        env = _env(data_dir, args.embedder)
        proc = subprocess.Popen([*knora, "serve", "--port", "0"], env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        try:
            while not (data_dir / "server.json").exists():
                if proc.poll() is not None:
                    raise SystemExit("the server did not start")
                time.sleep(0.1)
            url = json.loads((data_dir / "server.json").read_text())["url"]
            key = (data_dir / "cli.key").read_text().strip()
            doc = Path(tmp) / "alpha.md"
            doc.write_text("# Alpha\n\nAlpha is the first letter of the Greek alphabet.\n")
            subprocess.run([*knora, "ingest", "--kb", "Letters", str(doc)], env=env, check=True,
                           capture_output=True)
            figures: dict[str, list[float]] = {k: [] for k in (
                "kb_list_server_s", "kb_list_in_process_s", "ask_first_output_server_s",
                "ask_first_output_in_process_s", "server_first_token_s")}
            with httpx.Client(base_url=f"{url}/api/v1", headers={"X-API-Key": key}, timeout=120) as api:
                for _ in range(args.rounds):
                    figures["kb_list_server_s"].append(timed([*knora, "kb", "list"], env)[1])
                    figures["kb_list_in_process_s"].append(
                        timed([*knora, "kb", "list", "--in-process"], env)[1])
                    figures["server_first_token_s"].append(server_first_token(api))
                    figures["ask_first_output_server_s"].append(timed([*knora, "ask", QUESTION], env)[0])
                    figures["ask_first_output_in_process_s"].append(
                        timed([*knora, "ask", QUESTION, "--in-process"], env)[0])
        finally:
            proc.terminate()
            proc.wait(timeout=60)
    med = {k: round(statistics.median(v), 3) for k, v in figures.items()}
    med["kb_list_ratio"] = round(med["kb_list_in_process_s"] / med["kb_list_server_s"], 1)
    med["ask_overhead_s"] = round(med["ask_first_output_server_s"] - med["server_first_token_s"], 3)
    print(json.dumps({"embedder": args.embedder, "rounds": args.rounds, "load": os.getloadavg()[0], **med}))


if __name__ == "__main__":
    main()
