"""PostgreSQL keyword search with the in-memory BM25 index kept current from the change log (issue 16): what
one replica writes, another's next query sees; rankings and scores equal the SQLite engine's on the same
rows."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from knora.adapters.retrieval import postgres_keyword
from knora.adapters.retrieval.postgres import PostgresEngine
from knora.adapters.retrieval.sqlite import SqliteEngine
from knora.domain.search import EngineHit, IndexRow
from knora.ports.retrieval import EngineQuery
from tests.adapters.retrieval.test_engine_contract import ids, kq, row
from tests.conftest import fresh_database

pytestmark = [pytest.mark.pgvector, pytest.mark.integration]

WORDS = ["fox", "dog", "river", "bank", "money", "tree", "forest", "night", "light", "stone", "city", "road",
         "north", "south", "king", "queen", "北京", "上海", "大学", "城市", "河流", "银行"]


def corpus(n: int, seed: int = 3) -> list[IndexRow]:
    """Rows of varied length and term frequency, over two KBs, three documents, two tags, some FAQ rows."""
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        words = [rnd.choice(WORDS[: 6 + i % 16]) for _ in range(rnd.randint(3, 30))]
        out.append(row(f"s{i}", " ".join(words), kb="kb1" if i % 4 else "kb2", knowledge=f"k{i % 3}",
                       tag_id=f"t{i % 2}", is_recommended=i % 5 != 0,
                       knowledge_type="faq" if i % 7 == 0 else "document"))
    return out


QUERIES = ["fox", "river bank", "money money tree", "north king queen", "北京大学", "上海的城市 road",
           "unicorn", "fox unicorn stone"]


def queries() -> list[EngineQuery]:
    out = []
    for text in QUERIES:
        out += [kq(text, top_k=10), kq(text, knowledge_base_ids=["kb1", "kb2"], top_k=50),
                kq(text, knowledge_ids=["k1"], tag_ids=["t0"]),
                kq(text, only_recommended=True, threshold=0.3),
                kq(text, knowledge_type="faq", knowledge_base_ids=["kb1", "kb2"])]
    return out


def ranked(hits: list[EngineHit]) -> list[tuple[str, float]]:
    return [(h.chunk_id, h.score) for h in hits]


@asynccontextmanager
async def engines(server: Any, n: int = 2, **kw: Any) -> AsyncIterator[tuple[str, list[PostgresEngine]]]:
    async with fresh_database(server) as dsn:
        started = [PostgresEngine(dsn, **kw) for _ in range(n)]
        for e in started:
            await e.start()
        try:
            yield dsn, started
        finally:
            for e in started:
                await e.close()


async def sqlite_engine(tmp_path: Path, rows: list[IndexRow]) -> SqliteEngine:
    eng = SqliteEngine(tmp_path / "knora.db")
    await eng.start()
    await eng.index(rows)
    return eng


async def test_a_write_through_one_replica_is_seen_by_the_other(pgvector_server: Any) -> None:
    async with engines(pgvector_server) as (_, (reader, writer)):
        assert await reader.search(kq("fox")) == []  # the reader's index is loaded (empty) before any write
        assert reader.keyword_index_info()["ready"]
        await writer.index([row("a", "the quick brown fox"), row("b", "a lazy dog")])
        assert ids(await reader.search(kq("fox"))) == ["a"]
        await writer.index([row("a", "nothing about animals here")])  # re-indexed: new content
        assert await reader.search(kq("fox")) == []
        assert ids(await reader.search(kq("animals"))) == ["a"]
        await writer.set_enabled(["b"], False)
        assert await reader.search(kq("dog")) == []
        await writer.set_enabled(["b"], True)
        assert ids(await reader.search(kq("dog"))) == ["b"]
        await writer.delete_chunks(["b"])
        assert await reader.search(kq("dog")) == []
        await writer.index([row("c", "fox and dog", kb="kb2", knowledge="kx")])
        assert await reader.search(kq("fox")) == []  # another KB
        assert ids(await reader.search(kq("fox", knowledge_base_ids=["kb2"]))) == ["c"]
        await writer.delete_knowledge(["kx"])
        assert await reader.search(kq("fox", knowledge_base_ids=["kb2"])) == []
        await writer.index([row("d", "fox", kb="kb3")])
        await writer.delete_knowledge_base("kb3")
        assert await reader.search(kq("fox", knowledge_base_ids=["kb3"])) == []
        assert await reader.search(kq("zebra")) == []  # a term no replica has seen yet ...
        await writer.index([row("z", "zebra crossing")])
        assert ids(await reader.search(kq("zebra"))) == ["z"]  # ... is looked up again once rows moved on
        await writer.delete_chunks(["z"])
        assert await reader.search(kq("zebra")) == []
        info = reader.keyword_index_info()
        assert info["ready"]
        assert info["rows"] == 1  # only "a" is left, replayed, never reloaded


async def test_same_ranking_and_scores_as_sqlite(pgvector_server: Any, tmp_path: Path) -> None:
    rows = corpus(300)
    lite = await sqlite_engine(tmp_path, rows)
    try:
        async with engines(pgvector_server) as (_, (reader, writer)):
            await reader.warm_keyword()  # loaded while empty: everything below arrives through the log
            for i in range(0, len(rows), 70):
                await writer.index(rows[i : i + 70])
            fresh = PostgresEngine(writer._dsn)  # a replica started now loads the same rows in one piece
            await fresh.start()
            try:
                found = 0
                for q in queries():
                    want = ranked(await lite.search(q))
                    assert ranked(await reader.search(q)) == want, q
                    assert ranked(await fresh.search(q)) == want, q
                    found += len(want)
                assert found > 300  # the queries do find rows
            finally:
                await fresh.close()
    finally:
        await lite.close()


async def test_deletes_and_disables_match_sqlite(pgvector_server: Any, tmp_path: Path) -> None:
    rows = corpus(120, seed=5)
    lite = await sqlite_engine(tmp_path, rows)
    try:
        async with engines(pgvector_server) as (_, (reader, writer)):
            await writer.index(rows)
            await reader.warm_keyword()
            for eng in (lite, writer):
                await eng.delete_chunks([f"s{i}" for i in range(0, 120, 9)])
                await eng.set_enabled([f"s{i}" for i in range(1, 120, 4)], False)
                await eng.delete_knowledge(["k2"])
                await eng.index([row("s5", "fox fox river", knowledge="k1"), row("new", "king of the north")])
            for q in queries():
                assert ranked(await reader.search(q)) == ranked(await lite.search(q)), q
    finally:
        await lite.close()


async def test_concurrent_writers_leave_every_replica_exact(pgvector_server: Any) -> None:
    rows = corpus(400, seed=9)
    async with engines(pgvector_server, n=3) as (dsn, (reader, w1, w2)):
        await reader.warm_keyword()

        async def write(eng: PostgresEngine, part: list[IndexRow]) -> None:
            for i in range(0, len(part), 25):
                await eng.index(part[i : i + 25])
                await eng.set_enabled([r.chunk_id for r in part[i : i + 3]], False)

        await asyncio.gather(write(w1, rows[:200]), write(w2, rows[200:]), *(
            reader.search(kq(text)) for text in QUERIES))
        fresh = PostgresEngine(dsn)
        await fresh.start()
        try:
            for q in queries():
                assert ranked(await reader.search(q)) == ranked(await fresh.search(q)), q
        finally:
            await fresh.close()


async def test_a_replica_behind_a_trimmed_log_reloads(pgvector_server: Any,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(postgres_keyword, "LOG_KEEP", 5)
    async with engines(pgvector_server) as (_, (reader, writer)):
        await writer.index([row("a", "fox")])
        await reader.warm_keyword()
        before = reader._kw_index
        for i in range(12):  # 12 entries (> 2 × LOG_KEEP): the log is cut past the reader's position
            await writer.index([row(f"r{i}", "river fox")])
        hits = await reader.search(kq("river"))  # answered (ts_rank while the index reloads), not lost
        assert len(hits) == 12
        await reader.warm_keyword()
        assert reader._kw_index is not before
        assert reader.keyword_index_info()["rows"] == 13
        assert len(await reader.search(kq("fox"))) == 13


async def test_rows_written_without_token_ids_are_filled_in(pgvector_server: Any) -> None:
    """Rows an older replica wrote (no ``kw`` blob) are backfilled and found, by the load and by a replay."""
    async with engines(pgvector_server) as (dsn, (reader, writer)):
        await writer.index([row("a", "old fox"), row("b", "new dog")])
        conn = await asyncpg.connect(dsn)
        try:
            await conn.execute("UPDATE knora_ret_rows SET kw = NULL WHERE source_id = 'a'")
            await reader.warm_keyword()
            assert ids(await reader.search(kq("fox"))) == ["a"]
            await conn.execute(
                "INSERT INTO knora_ret_rows(source_id, chunk_id, knowledge_id, kb_id, tenant_id, content,"
                " tsv) VALUES ('c', 'c', 'k1', 'kb1', 1, 'another fox',"
                " to_tsvector('simple', 'another fox'))")
            assert sorted(ids(await reader.search(kq("fox")))) == ["a", "c"]
            assert await conn.fetchval("SELECT count(*) FROM knora_ret_rows WHERE kw IS NULL") == 0
        finally:
            await conn.close()


async def test_without_the_index_ts_rank_answers(pgvector_server: Any) -> None:
    async with engines(pgvector_server, n=1, keyword_index=False) as (_, (eng,)):
        await eng.index([row("a", "fox fox"), row("b", "fox and a dog")])
        assert ids(await eng.search(kq("fox"))) == ["a", "b"]
        assert not eng.keyword_index_info()["ready"]


def test_long_terms_are_keyed_by_their_hash() -> None:
    long = "x" * 5000
    assert postgres_keyword.term_key("fox") == "fox"
    key = postgres_keyword.term_key(long)
    assert key.startswith("#sha256:")
    assert len(key) < 100
    assert postgres_keyword.term_key(long) == key != postgres_keyword.term_key(long + "y")


async def test_a_database_from_before_the_index_is_upgraded(pgvector_server: Any) -> None:
    """Rows of the former schema (no row id, no token ids, no log) get ids and blobs at start and load."""
    async with fresh_database(pgvector_server) as dsn:
        conn = await asyncpg.connect(dsn)
        try:
            await conn.execute(
                "CREATE TABLE knora_ret_rows (source_id TEXT PRIMARY KEY, chunk_id TEXT NOT NULL,"
                " knowledge_id TEXT NOT NULL, kb_id TEXT NOT NULL, tenant_id INTEGER NOT NULL, tag_id TEXT,"
                " is_enabled BOOLEAN NOT NULL DEFAULT TRUE, is_recommended BOOLEAN NOT NULL DEFAULT TRUE,"
                " knowledge_type TEXT NOT NULL DEFAULT 'document', content TEXT NOT NULL,"
                " tsv TSVECTOR NOT NULL, dim INTEGER NOT NULL DEFAULT 0)")
            await conn.executemany(
                "INSERT INTO knora_ret_rows(source_id, chunk_id, knowledge_id, kb_id, tenant_id, content,"
                " tsv) VALUES ($1, $1, 'k1', 'kb1', 1, $2, to_tsvector('simple', $2))",
                [("a", "old fox"), ("b", "old dog"), ("c", "fox fox fox")])
        finally:
            await conn.close()
        eng = PostgresEngine(dsn)
        await eng.start()
        try:
            assert ids(await eng.search(kq("fox"))) == ["c", "a"]
            assert eng.keyword_index_info()["rows"] == 3
        finally:
            await eng.close()
