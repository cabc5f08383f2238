"""Memory of the blob stores on one large original: Python-traced peak (tracemalloc) of a put and of a get of
``--mb`` MiB, above the input for the put and including the returned bytes for the get. Checks that the
PostgreSQL store sends pieces (no second copy of the object on write). Needs PostgreSQL on 127.0.0.1:5432
(trust auth; a database of its own, dropped after) and, for ``--store s3``, moto installed (started here).
Prints one JSON line.

    python benchmarks/blob_memory.py [--store postgres|s3|local] [--mb 50]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import tracemalloc
import uuid
from pathlib import Path
from typing import Any

ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"


async def _measure(store: Any, size: int) -> dict[str, float]:
    data = os.urandom(size)
    await store.put("bench/a/warm", b"x")  # connections opened before measuring
    tracemalloc.start()
    await store.put("bench/a/big", data)
    _, put_peak = tracemalloc.get_traced_memory()
    tracemalloc.reset_peak()
    got = await store.get("bench/a/big")
    _, get_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert got == data
    mib = 1024 * 1024
    return {"put_peak_above_input_mib": round(put_peak / mib, 1), "get_peak_mib": round(get_peak / mib, 1)}


async def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--store", default="postgres", choices=["postgres", "s3", "local"])
    p.add_argument("--mb", type=int, default=50)
    args = p.parse_args()
    size = args.mb * 1024 * 1024
    out: dict[str, Any] = {"store": args.store, "object_mib": args.mb}
    if args.store == "postgres":
        import asyncpg

        from knora.adapters.blobs.postgres import PostgresBlobStore
        from knora.adapters.db.engine import make_engine, migrate

        name = f"knora_bench_{uuid.uuid4().hex[:8]}"
        admin = await asyncpg.connect(ADMIN)
        await admin.execute(f'CREATE DATABASE "{name}"')
        engine = make_engine(f"postgresql+asyncpg://postgres@127.0.0.1:5432/{name}")
        try:
            await migrate(engine)
            out.update(await _measure(PostgresBlobStore(engine), size))
        finally:
            await engine.dispose()
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            await admin.close()
    elif args.store == "s3":
        from moto.server import ThreadedMotoServer

        from knora.adapters.blobs.s3 import S3BlobStore

        server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        server.start()
        host, port = server.get_host_and_port()
        try:
            store = S3BlobStore(bucket="bench", endpoint_url=f"http://{host}:{port}", region="us-east-1",
                                access_key_id="test", secret_access_key="test", create_bucket=True)
            out.update(await _measure(store, size))  # moto's own copies (same process) are counted too
            await store.close()
        finally:
            server.stop()
    else:
        from knora.adapters.blobs.local import LocalBlobStore

        with tempfile.TemporaryDirectory() as tmp:
            out.update(await _measure(LocalBlobStore(Path(tmp)), size))
    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main())
