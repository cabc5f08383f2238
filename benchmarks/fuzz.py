"""A larger schema-driven fuzz run over Knora's ``/openapi.json``; prints one JSON line of counts.

The same generator and oracle as the suite's bounded run (``tests/api/fuzzing.py``): first the fixed sweep
(every route with every hostile raw body, every request field with every wrong kind of value), then
``--cases`` random cases (hostile and valid-ish bodies, path ids that exist and ones that do not), against
the in-process app over fresh embedded services (SQLite, the hashing embedder). Counts: cases, 5xx,
non-envelope errors, and both by route (sweep and random together; ``sweep`` gives the sweep's own).

    python benchmarks/fuzz.py [--cases 3000] [--seed 1] [--examples]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import httpx

from knora.api.app import create_app
from knora.root import build_services
from knora.settings import Settings
from tests.api import fuzzing

API_KEY = "sk-fuzz-key"


async def main(cases: int, seed: int, show_examples: bool) -> None:
    with tempfile.TemporaryDirectory() as data_dir:
        settings = Settings(data_dir=Path(data_dir), api_key=API_KEY, embedder="local:hash", sample_kb=False,
                            max_upload_bytes=50_000, rate_limit_per_minute=0,
                            rate_limit_heavy_per_minute=0)  # a fuzzer is one caller
        services = await build_services(settings)
        try:
            app = create_app(services=services)
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app, raise_app_exceptions=False), base_url="http://knora.test",
                                         headers={"X-API-Key": API_KEY}, timeout=120) as http:
                ops = fuzzing.operations((await http.get("/openapi.json")).json())
                ids = await fuzzing.seed_ids(http)
                tally = fuzzing.Tally()
                started = time.perf_counter()
                loop = asyncio.get_running_loop()
                await asyncio.to_thread(fuzzing.run_sweep, loop, http, fuzzing.sweep(ops, ids), tally)
                swept = {"cases": tally.cases, "5xx": tally.server_errors,
                         "non_envelope_errors": tally.non_envelope}
                await asyncio.to_thread(fuzzing.run, loop, http, fuzzing.case_strategy(ops, ids), cases,
                                        tally, seed_value=seed)
                elapsed = time.perf_counter() - started
        finally:
            await services.aclose()
    bad = {r: c for r, c in sorted(tally.by_route.items()) if c["5xx"] or c["non_envelope"]}
    out = {"cases": tally.cases, "5xx": tally.server_errors, "non_envelope_errors": tally.non_envelope,
           "sweep": swept, "routes": len(tally.by_route), "seconds": round(elapsed, 1), "failing_routes": bad,
           "by_route": {r: c["cases"] for r, c in sorted(tally.by_route.items())}}
    if show_examples:
        out["examples"] = tally.examples
    print(json.dumps(out))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--examples", action="store_true", help="include up to 20 failing cases")
    args = parser.parse_args()
    logging.disable(logging.CRITICAL)  # the 5xx are counted; their tracebacks would flood the output
    asyncio.run(main(args.cases, args.seed, args.examples))
