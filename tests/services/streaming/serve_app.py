"""A Knora server process for the several-replicas test: PostgreSQL + Redis stream log + a slow scripted
runner.

Run as ``python tests/services/streaming/serve_app.py PORT DB_URL REDIS_PREFIX DATA_DIR [DELTA_DELAY_S]``
(other settings from ``KNORA_*`` variables, e.g. ``KNORA_TURN_LEASE_SECONDS``).
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import uvicorn

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from knora.api.app import create_app
from knora.root import build_services
from knora.settings import Settings
from tests.conftest import RECORDING, REDIS_URL, TEST_API_KEY
from tests.services.streaming.runners import ScriptedRunner


async def main(port: int, db_url: str, prefix: str, data_dir: str, delay: float = 0.05) -> None:
    settings = Settings(database_url=db_url, stream_log="redis", redis_url=REDIS_URL, redis_prefix=prefix,
                        data_dir=Path(data_dir), api_key=TEST_API_KEY, embedder="local:hash", sample_kb=False)
    c: Any = await build_services(settings, RECORDING)
    c.runners.quick = ScriptedRunner(chunk=2, delay=delay)  # ~45 deltas, slow enough to act mid-stream
    server = uvicorn.Server(uvicorn.Config(create_app(services=c), host="127.0.0.1", port=port,
                                           log_level="warning"))
    try:
        await server.serve()
    finally:
        await c.aclose()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4],
                     float(sys.argv[5]) if len(sys.argv) > 5 else 0.05))
