"""``knora serve``: the HTTP API (and web UI when present) with uvicorn."""

from __future__ import annotations

import argparse
import gc
from typing import Any

from knora.settings import Settings


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("serve", help="run the HTTP API on --host/--port")
    p.add_argument("--host", default=None, help="default: settings.host (127.0.0.1)")
    p.add_argument("--port", type=int, default=None, help="default: settings.port (8080)")
    p.set_defaults(handler=_serve)


async def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from knora.api.app import create_app
    from knora.root import build_services

    settings = Settings()
    host = args.host or settings.host
    port = args.port or settings.port
    c = await build_services(settings)
    # Everything loaded so far (modules, models, compiled statements) lives as long as the process: moved out
    # of the cyclic collector's generations, so its collections stop walking it again and again under load
    # (benchmarks/stream.py: about a sixth less CPU per streamed event with a thousand turns in flight).
    gc.freeze()
    try:
        shown = "localhost" if host in ("0.0.0.0", "::") else host
        print(f"Knora {settings.data_dir.resolve()} → http://{shown}:{port}  "
              f"(API: http://{shown}:{port}/api/v1, docs: /docs)", flush=True)
        if c.generated_api_key:
            print(f"API key (shown once, keep it): {c.generated_api_key}", flush=True)
        config = uvicorn.Config(create_app(services=c), host=host, port=port,
                                log_level=settings.log_level.lower(),
                                lifespan="on")
        await uvicorn.Server(config).serve()
    finally:
        await c.aclose()
    return 0


