"""Authentication overhead per request (issue 14); prints one JSON line.

The same in-process app (SQLite, ``GET /api/v1/auth/validate``: a route that does nothing but authenticate)
is called in interleaved rounds three ways:

- ``before``: the key check Knora had before accounts and roles (the ``X-API-Key`` looked up in the tenant
  service's cache, the tenant id returned; no route policy), put back with a dependency override;
- ``key``: an API key through today's check (the key's grant, its expiry, the route's rule, the role);
- ``token``: a signed-in user's access token (JWT signature and claims, the session and role cache).

Reported: microseconds of CPU and of wall time per request for each, and the ratios to ``before`` (the goal:
within 1.1×). Rate limits are off in all three, so only authentication differs.

    nice python benchmarks/auth.py [--requests 2000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx
from fastapi import Request

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from knora.api.app import create_app
from knora.api.deps import credentials, get_principal
from knora.domain.access import Principal, Role
from knora.domain.errors import Unauthorized
from knora.root import build_services
from knora.settings import Settings

KEY = "sk-bench-key-0123456789"
PASSWORD = "bench-password"


async def _run(requests: int, rounds: int) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(data_dir=Path(tmp), api_key=KEY, embedder="local:hash", sample_kb=False,
                            rate_limit_per_minute=0, rate_limit_heavy_per_minute=0, owner_password=PASSWORD)
        c = await build_services(settings)
        try:
            tenants = c.tenants

            async def before(request: Request) -> Principal:
                """Knora's check before issue 14 (knora/api/deps.py at bc480a8): the first known key."""
                if not credentials(request.headers):
                    raise Unauthorized("Unauthorized: missing authentication")
                for candidate in credentials(request.headers):
                    tenant_id = await tenants.authenticate(candidate)
                    if tenant_id is not None:
                        return Principal(tenant_id=tenant_id, role=Role.OWNER)
                raise Unauthorized("Unauthorized: invalid API key")

            now_app = create_app(services=c)
            old_app = create_app(services=c)
            old_app.dependency_overrides[get_principal] = before
            login = await c.accounts.login(settings.owner_email, PASSWORD, "127.0.0.1")
            ways = {"before": (old_app, {"X-API-Key": KEY}), "key": (now_app, {"X-API-Key": KEY}),
                    "token": (now_app, {"Authorization": f"Bearer {login.tokens.access_token}"})}
            clients = {name: httpx.AsyncClient(transport=httpx.ASGITransport(app=app), headers=headers,
                                               base_url="http://knora.bench")
                       for name, (app, headers) in ways.items()}
            cpu: dict[str, list[float]] = {name: [] for name in ways}
            wall: dict[str, list[float]] = {name: [] for name in ways}
            try:
                for name, client in clients.items():  # warm-up: caches filled, code paths compiled
                    for _ in range(200):
                        r = await client.get("/api/v1/auth/validate")
                        assert r.status_code == 200, (name, r.text)
                for _ in range(rounds):
                    for name, client in clients.items():
                        c0, w0 = time.process_time(), time.perf_counter()
                        for _ in range(requests):
                            await client.get("/api/v1/auth/validate")
                        cpu[name].append((time.process_time() - c0) / requests * 1e6)
                        wall[name].append((time.perf_counter() - w0) / requests * 1e6)
            finally:
                for client in clients.values():
                    await client.aclose()
        finally:
            await c.aclose()
    med = {name: statistics.median(v) for name, v in cpu.items()}
    med_wall = {name: statistics.median(v) for name, v in wall.items()}
    return {"benchmark": "auth", "requests_per_round": requests, "rounds": rounds,
            "cpu_us_per_request": {k: round(v, 1) for k, v in med.items()},
            "wall_us_per_request": {k: round(v, 1) for k, v in med_wall.items()},
            "key_ratio": round(med["key"] / med["before"], 3),
            "token_ratio": round(med["token"] / med["before"], 3),
            "load_average": round(os.getloadavg()[0], 2)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--requests", type=int, default=2000)
    p.add_argument("--rounds", type=int, default=5)
    args = p.parse_args()
    print(json.dumps(asyncio.run(_run(args.requests, args.rounds))))


if __name__ == "__main__":
    main()
