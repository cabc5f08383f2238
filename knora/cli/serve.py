"""``knora serve``: the HTTP API (and web UI when present) with uvicorn.

Once uvicorn listens, the data dir records where (``server.json``) and holds the CLI's key (``cli.key``), so
the other commands talk to this server instead of starting the engine themselves (``knora.cli.discovery``,
docs/cli.md). ``--port 0`` takes a free port; the record names the one bound.
"""

from __future__ import annotations

import argparse
import gc
import socket
import sys
from typing import TYPE_CHECKING, Any

from knora.settings import Settings

if TYPE_CHECKING:
    from knora.root import Services


GC_THRESHOLDS = (50_000, 20, 100)
GIL_SWITCH_SECONDS = float(__import__("os").environ.get("XGIL", "0.001"))


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("serve", help="run the HTTP API on --host/--port")
    p.add_argument("--host", default=None, help="default: settings.host (127.0.0.1)")
    p.add_argument("--port", type=int, default=None, help="default: settings.port (8080); 0 = a free port")
    p.set_defaults(handler=_serve)


def local_url(host: str, port: int) -> str:
    """The URL a client on this machine reaches a server bound to ``host:port`` at."""
    if host in ("0.0.0.0", ""):
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def bound_port(server: Any, fallback: int) -> int:
    """The port uvicorn's first listening socket is bound to (the one chosen for ``--port 0``)."""
    for listener in getattr(server, "servers", None) or []:
        for sock in getattr(listener, "sockets", None) or []:
            if sock.family in (socket.AF_INET, socket.AF_INET6):
                return int(sock.getsockname()[1])
    return fallback


async def _announce(c: Services, url: str) -> None:
    """Writes the record and the CLI key into the data dir; warns about another live server there."""
    from knora import __version__
    from knora.cli.discovery import live_record, read_key, write_key, write_record

    data_dir = c.settings.data_dir
    other = live_record(data_dir)
    if other is not None and other.url != url:
        print(f"knora: another server (pid {other.pid}, {other.url}) uses this data dir; the CLI will talk "
              "to this one", file=sys.stderr, flush=True)
    key, new = await c.tenants.cli_key(read_key(data_dir))
    if new:
        write_key(data_dir, key)
    write_record(data_dir, url, __version__)


async def _bindings_allow(settings: Settings) -> bool:
    """Knowledge bases bound to another blob store than the configured one (their originals were never moved
    there): refused with several replicas (no replica could read them), a warning for one server. Asked before
    any service starts, so no job worker of a refused replica fails their pending documents."""
    from knora.adapters.blobs.registry import binding_problem
    from knora.adapters.db.engine import make_engine, make_sessionmaker
    from knora.adapters.db.repos.blob_bindings import SqlBlobBindings

    db = make_engine(settings.effective_database_url)
    try:
        elsewhere = await SqlBlobBindings(make_sessionmaker(db)).bound_elsewhere(settings.blob_store)
    finally:
        await db.dispose()
    problem = binding_problem(settings, elsewhere)
    if problem is None:
        return True
    if settings.several_replicas:
        print(f"knora serve: refusing to start several replicas: {problem}", file=sys.stderr, flush=True)
        return False
    print(f"knora serve: WARNING: {problem}", file=sys.stderr, flush=True)
    return True


async def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from knora.adapters.blobs.registry import replica_problem as blob_problem
    from knora.adapters.secrets.fernet import replica_problem as secret_problem
    from knora.api.app import create_app
    from knora.cli.discovery import remove_record
    from knora.root import build_services

    settings = Settings()
    for problem in (blob_problem(settings), secret_problem(settings)):
        if problem is not None:
            print(f"knora serve: refusing to start: {problem}", file=sys.stderr, flush=True)
            return 2
    if not await _bindings_allow(settings):
        return 2
    host = args.host or settings.host
    port = settings.port if args.port is None else args.port
    c = await build_services(settings)
    # Everything loaded so far (modules, models, compiled statements) lives as long as the process: moved out
    # of the cyclic collector's generations, so its collections stop walking it again and again under load
    # (benchmarks/stream.py: about a sixth less CPU per streamed event with a thousand turns in flight).
    gc.freeze()
    # A full collection walks every object it tracks while holding the interpreter lock: with the ~600k
    # objects of a large document's chunk records that is 0.2 s in which chat cannot run, and CPython's
    # default thresholds start several as those records are built. Young collections every 50k allocations
    # instead of 700, and an old one every 20 × 100 of them, leave cyclic garbage to wait a little longer
    # (it is still collected) and make those pauses rare (benchmarks/ingest_fairness.py).
    gc.set_threshold(*GC_THRESHOLDS)
    # Ingestion's Python work (chunking a large text, building its records) runs in threads; the event loop
    # waits up to one switch interval for the interpreter lock at each of a chat turn's thread hops. 1 ms
    # instead of CPython's 5 ms keeps a turn's added wait small during a large upload
    # (benchmarks/ingest_fairness.py), at a cost to throughput too small to measure here.
    sys.setswitchinterval(GIL_SWITCH_SECONDS)

    class Server(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            if self.should_exit:  # the port was taken: nothing listens
                return
            url = local_url(host, bound_port(self, port))
            print(f"Knora {settings.data_dir.resolve()} → {url}  (API: {url}/api/v1, docs: /docs)",
                  flush=True)
            if c.generated_api_key:
                print(f"API key (shown once, keep it): {c.generated_api_key}", flush=True)
            if c.generated_owner:
                login, password = c.generated_owner
                print(f"Owner account (shown once, keep it): {login} / {password}", flush=True)
            await _announce(c, url)

        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            # first, so a command started meanwhile does not pick a server going away; here, not after
            # serve(): uvicorn re-raises a SIGTERM it caught once serve() ends, and that ends the process
            remove_record(settings.data_dir)
            app.state.draining = True  # /health/ready answers 503 from now on
            # stops listening, then waits up to shutdown_grace_seconds for requests and streams in flight
            # (a stream cut then resumes on another replica from the shared log)
            await super().shutdown(sockets)
            # closed here for the same reason: job leases released, turns' owners gone, the database closed
            await c.aclose()
            print("Knora stopped", flush=True)

    app = create_app(services=c)
    try:
        config = uvicorn.Config(app, host=host, port=port, log_level=settings.log_level.lower(),
                                lifespan="on", timeout_graceful_shutdown=settings.shutdown_grace_seconds)
        await Server(config).serve()
    finally:
        remove_record(settings.data_dir)
        await c.aclose()  # a no-op after a shutdown that closed them; this covers start-up failures
    return 0
