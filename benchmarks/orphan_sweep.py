"""The orphan sweep's query (incomplete assistant messages older than a grace) on a large messages table,
with and without the partial index ``ix_messages_incomplete``. Prints one JSON line: the plan and the median
time of the query.

    python benchmarks/orphan_sweep.py [--messages 200000] [--no-index] [--database-url URL]

The table holds ``--messages`` completed messages (user and assistant, as a long-lived install has) and 20
incomplete turns in flight. ``--no-index`` drops the index after migrating (the schema of revision 0001).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sqlalchemy import insert, text

from knora.adapters.db.engine import make_engine, migrate
from knora.adapters.db.repos.messages import incomplete_query
from knora.adapters.db.tables import MessageRow, SessionRow

IN_FLIGHT = 20
INDEX = "ix_messages_incomplete"


async def _fill(conn: Any, messages: int) -> None:
    now = datetime.now(UTC)
    sessions = [{"id": str(uuid.uuid4()), "tenant_id": 1, "user_id": "", "title": "", "description": "",
                 "is_pinned": False, "last_request_state": {}, "source": "web", "agent_id": "",
                 "created_at": now, "updated_at": now} for _ in range(max(messages // 100, 1))]
    await conn.execute(insert(SessionRow), sessions)
    base = {"tenant_id": 1, "request_id": "", "content": "an answer " * 20, "rendered_content": "",
            "knowledge_references": [], "agent_steps": [], "mentioned_items": [], "images": [],
            "is_fallback": False, "agent_duration_ms": 0, "channel": "web", "agent_id": "", "model_id": "",
            "debug": {}}
    batch: list[dict[str, Any]] = []
    for i in range(messages + IN_FLIGHT):
        at = now - timedelta(seconds=messages + IN_FLIGHT - i)
        batch.append({**base, "id": str(uuid.uuid4()), "session_id": sessions[i % len(sessions)]["id"],
                      "role": "user" if i % 2 else "assistant", "is_completed": i < messages or i % 2 == 1,
                      "created_at": at, "updated_at": at})
        if len(batch) == 5000:
            await conn.execute(insert(MessageRow), batch)
            batch = []
    if batch:
        await conn.execute(insert(MessageRow), batch)


async def main(messages: int, no_index: bool, url: str | None, repeat: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        db_url = url or f"sqlite+aiosqlite:///{tmp}/bench.db"
        engine = make_engine(db_url)
        try:
            await migrate(engine)
            async with engine.begin() as conn:
                if no_index:
                    await conn.execute(text(f"DROP INDEX {INDEX}"))
                await conn.execute(text("DELETE FROM messages"))
                await conn.execute(text("DELETE FROM sessions"))
                await _fill(conn, messages)
                await conn.execute(text("ANALYZE"))
            query = incomplete_query(older_than=datetime.now(UTC) + timedelta(seconds=1))
            compiled = query.compile(dialect=engine.dialect)
            explain = "EXPLAIN QUERY PLAN " if engine.dialect.name == "sqlite" else "EXPLAIN "
            params = tuple(compiled.params[k] for k in compiled.positiontup or ())
            if engine.dialect.name == "sqlite":
                params = tuple(p.isoformat() if isinstance(p, datetime) else p for p in params)
            async with engine.connect() as conn:
                plan = [str(r[-1] if engine.dialect.name == "sqlite" else r[0])
                        for r in await conn.exec_driver_sql(f"{explain}{compiled}", params)]
                times, found = [], 0
                for _ in range(repeat):
                    t0 = time.perf_counter()
                    found = len((await conn.execute(query)).all())
                    times.append((time.perf_counter() - t0) * 1000)
        finally:
            if url:  # a database that outlives the run: left as migrated, index included
                async with engine.begin() as conn:
                    await conn.execute(text("DELETE FROM messages"))
                    await conn.execute(text("DELETE FROM sessions"))
                    index = next(i for i in MessageRow.__table__.indexes if i.name == INDEX)
                    await conn.run_sync(lambda c: index.create(c, checkfirst=True))
            await engine.dispose()
    return {"benchmark": "orphan_sweep", "dialect": engine.dialect.name, "messages": messages,
            "index": not no_index, "found": found, "plan": plan,
            "query_ms_median": round(statistics.median(times), 3), "query_ms_min": round(min(times), 3)}


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--messages", type=int, default=200_000)
    ap.add_argument("--no-index", action="store_true")
    ap.add_argument("--database-url", default=None, help="a scratch database (its messages are deleted)")
    ap.add_argument("--repeat", type=int, default=20)
    a = ap.parse_args()
    print(json.dumps(asyncio.run(main(a.messages, a.no_index, a.database_url, a.repeat))))
