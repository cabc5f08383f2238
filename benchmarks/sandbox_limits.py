"""Runaway model-written SQL in the DuckDB sandbox (issue 20, 4e): peak memory and time of each query, each in
a fresh process (peak RSS is the process's ``VmHWM``).

Cases: a 1 GB string from one ``repeat`` call, a ~4 GB ``string_agg`` over a self cross join, and a cross join
that runs for minutes under a 1 s timeout. ``--no-limits`` runs the same SQL on a plain DuckDB connection with
no static check (the sandbox before the limits): it needs about 12 GB of memory and a minute.

    python benchmarks/sandbox_limits.py [--no-limits]

Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

CASES = {
    "repeat_1gb": "SELECT length(repeat('x', 1000000000)) FROM t LIMIT 1",
    "string_agg_4gb": "SELECT length(string_agg(a.s || b.s, ',')) FROM t a, t b",
    "cross_join_timeout_1s": "SELECT count(*) FROM t a, t b, t c",
}


def _peak_mb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) // 1024
    return -1


def one(case: str, limits: bool) -> dict[str, object]:
    import duckdb

    from knora.adapters import duckdb_sandbox as sb

    rows = [[i, "x" * 1000] for i in range(2000)]
    timeout = 1.0 if case.endswith("timeout_1s") else 30.0
    con = sb.connect(sb.SandboxLimits(timeout_seconds=timeout)) if limits else duckdb.connect(":memory:")
    sb.load_csv(con, "t", sb.rows_to_csv(["i", "s"], rows))
    sb.lock(con)
    t0 = time.perf_counter()
    try:
        if limits:
            sb.run(con, CASES[case], max_rows=1, timeout_seconds=timeout)
        else:
            con.execute(CASES[case]).fetchmany(1)
        outcome = "ran to the end"
    except Exception as exc:  # the outcome is the figure
        outcome = f"{type(exc).__name__}: {str(exc)[:80]}"
    return {"case": case, "outcome": outcome, "seconds": round(time.perf_counter() - t0, 2),
            "peak_rss_mb": _peak_mb()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--no-limits", action="store_true")
    ap.add_argument("--one", choices=sorted(CASES), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.one:
        print(json.dumps(one(a.one, not a.no_limits)))
        return
    results = []
    for case in CASES:
        cmd = [sys.executable, __file__, "--one", case] + (["--no-limits"] if a.no_limits else [])
        out = subprocess.run(cmd, capture_output=True, text=True, check=False)
        results.append(json.loads(out.stdout) if out.returncode == 0 else
                       {"case": case, "outcome": f"process ended with {out.returncode}"})
    print(json.dumps({"benchmark": "sandbox_limits", "limits": not a.no_limits, "cases": results}))


if __name__ == "__main__":
    main()
