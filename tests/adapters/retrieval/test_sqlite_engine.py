"""What only the embedded engine does: other writers on the same file, the HNSW path, keyword
normalisation."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from knora.adapters.retrieval import tokenize as tok
from knora.adapters.retrieval.sqlite import SqliteEngine, sqlite_path
from knora.adapters.retrieval.vectors import Filter, RowMeta, VectorSet
from knora.domain.search import IndexRow
from knora.ports.retrieval import EngineQuery

pytestmark = pytest.mark.integration


def row(i: int, text: str, vec: np.ndarray, kb: str = "kb") -> IndexRow:
    return IndexRow(source_id=f"s{i}", chunk_id=f"c{i}", knowledge_id="k", knowledge_base_id=kb, tenant_id=1,
                    content=text, embedding=vec.tolist())


def unit(rng: np.random.Generator, n: int, d: int = 16) -> np.ndarray:
    v = rng.normal(size=(n, d)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


class TestOtherWriters:
    async def test_second_process_sees_writes_incrementally(self, tmp_path: Path) -> None:
        rng = np.random.default_rng(0)
        vecs = unit(rng, 6)
        server, cli = SqliteEngine(tmp_path / "k.db"), SqliteEngine(tmp_path / "k.db")
        await server.start()
        await cli.start()
        try:
            await cli.index([row(i, f"text {i}", vecs[i]) for i in range(3)])
            q = EngineQuery(mode="vector", knowledge_base_ids=["kb"], embedding=vecs[4].tolist(),
                            threshold=-1)
            assert len(await server.search(q)) == 3  # loads the set
            loaded = server._sets[("kb", 16)]
            await cli.index([row(4, "text four", vecs[4])])
            await cli.delete_chunks(["c0"])
            await cli.set_enabled(["c1"], False)
            hits = await server.search(q)
            assert server._sets[("kb", 16)] is loaded  # replayed from the change log, not reloaded
            assert hits[0].chunk_id == "c4"
            assert {h.chunk_id for h in hits} == {"c4", "c2"}
            kw = await server.search(EngineQuery(mode="keyword", knowledge_base_ids=["kb"], text="four"))
            assert [h.chunk_id for h in kw] == ["c4"]
        finally:
            await server.close()
            await cli.close()

    def test_needs_a_file(self) -> None:
        assert sqlite_path("sqlite+aiosqlite:////tmp/x/knora.db") == Path("/tmp/x/knora.db")
        with pytest.raises(ValueError):  # noqa: PT011 - the type is the contract, not the message
            sqlite_path("sqlite+aiosqlite:///:memory:")


class TestVectorSetHNSW:
    def test_hnsw_matches_exact_and_follows_updates(self) -> None:
        rng = np.random.default_rng(1)
        data = unit(rng, 600, 32)
        meta = [RowMeta(knowledge_id=f"k{i % 3}", tag_id=None, is_enabled=True, is_recommended=True,
                        knowledge_type="document") for i in range(600)]
        vs = VectorSet(32, ann_min_rows=10**9)
        vs.upsert(list(range(600)), data, meta)
        exact = [vs.search(q, 10, -1.0, Filter()) for q in data[:20]]
        vs.build_ann_now()
        assert vs._ann is not None
        assert vs.ann_recall is not None
        assert vs.ann_recall >= 0.9
        approx = [vs.search(q, 10, -1.0, Filter()) for q in data[:20]]
        overlap = np.mean([len({r for r, _ in a} & {r for r, _ in e}) / 10 for a, e in zip(approx, exact,
                                                                                          strict=True)])
        assert overlap >= 0.9
        assert approx[0][0] == (0, pytest.approx(1.0, abs=1e-5))  # scores are exact cosines (re-scored)
        vs.remove([0])
        assert vs.search(data[0], 1, -1.0, Filter())[0][0] != 0
        new = unit(rng, 1, 32)
        vs.upsert([1000], new, [meta[0]])
        assert vs.search(new[0], 1, -1.0, Filter())[0][0] == 1000
        # a selective filter bypasses the graph and stays exact
        only = vs.search(data[5], 5, -1.0, Filter(knowledge_ids=["k2"]))
        assert only
        assert all(r % 3 == 2 or r == 1000 for r, _ in only)


class TestKeywordScores:
    async def test_coverage_normalisation(self, tmp_path: Path) -> None:
        eng = SqliteEngine(tmp_path / "k.db")
        await eng.start()
        try:
            rng = np.random.default_rng(2)
            texts = ["apples and pears", "apples only here", "bananas grow in bunches", "cherries are red"]
            await eng.index([row(i, t, unit(rng, 1)[0]) for i, t in enumerate(texts)])
            hits = await eng.search(EngineQuery(mode="keyword", knowledge_base_ids=["kb"],
                                                text="apples pears"))
            assert hits[0].chunk_id == "c0"
            assert hits[0].score > hits[1].score
            assert 0 < hits[1].score < 1
            assert hits[0].score == pytest.approx(1.0, abs=0.25)  # covers the whole query
        finally:
            await eng.close()


class TestTokenize:
    pytestmark = pytest.mark.unit

    def test_rules(self) -> None:
        assert tok.tokenize("Running, RUNS; ran!") == ["run", "run", "ran"]
        assert "北京大学" in tok.tokenize("我在北京大学读书")
        assert "北京" in tok.tokenize("我在北京大学读书")
        assert tok.tokenize(" \t\n，。！") == []
        assert tok.query_terms("the the a") == ["the", "a"]  # only stopwords: keep them rather than nothing
        assert len(tok.query_terms(" ".join(f"w{i}" for i in range(500)))) == 64
        assert tok.fts5_match(['a"b', "c"]) == '"a""b" OR "c"'
        assert tok.tsquery(["o'k", "x"]) == "'o''k' | 'x'"
        assert tok.tsvector_literal("run runs ran") == "'run':1,2 'ran':3"


class TestLargeWrites:
    async def test_an_index_call_tokenises_outside_the_lock_and_writes_once(
            self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        from knora.adapters.retrieval import sqlite_store

        engine = SqliteEngine(tmp_path / "k.db")
        await engine.start()
        held_while_tokenising: list[bool] = []
        real_tokenize = tok.tokenize

        def spy(text: str, **options: bool) -> list[str]:
            held_while_tokenising.append(engine._db_lock.locked())
            return real_tokenize(text, **options)

        monkeypatch.setattr(sqlite_store.tok, "tokenize", spy)
        transactions = 0
        real_write = engine._write

        def counting(fn: object, *args: object) -> None:
            nonlocal transactions
            transactions += 1
            real_write(fn, *args)

        monkeypatch.setattr(engine, "_write", counting)
        try:
            vecs = unit(np.random.default_rng(1), 10)
            await engine.index([row(i, f"passage number {i} about otters", vecs[i]) for i in range(10)])
            assert transactions == 1  # one change-log replay for the readers, not one per slice
            assert len(held_while_tokenising) == 10
            assert not any(held_while_tokenising)  # the lock searches share was free meanwhile
            monkeypatch.setattr(sqlite_store.tok, "tokenize", real_tokenize)
            hits = await engine.search(EngineQuery(mode="keyword", knowledge_base_ids=["kb"], text="otters",
                                                   top_k=20))
            assert {h.chunk_id for h in hits} == {f"c{i}" for i in range(10)}
            dense = await engine.search(EngineQuery(mode="vector", knowledge_base_ids=["kb"],
                                                    embedding=vecs[7].tolist(), threshold=-1, top_k=20))
            assert dense[0].chunk_id == "c7"
            assert len(dense) == 10
        finally:
            await engine.close()

    async def test_searches_do_not_wait_for_a_write_in_progress(self, tmp_path: Path) -> None:
        import asyncio

        engine = SqliteEngine(tmp_path / "k.db")
        await engine.start()
        try:
            vecs = unit(np.random.default_rng(2), 4)
            await engine.index([row(i, f"note {i} on beavers", vecs[i]) for i in range(3)])
            # the first keyword query loads the in-memory index (a one-off that may write); then steady state
            await engine.search(EngineQuery(mode="keyword", knowledge_base_ids=["kb"], text="beavers"))
            with engine._db_lock:  # what a long index transaction holds for its whole write
                dense = await asyncio.wait_for(engine.search(EngineQuery(
                    mode="vector", knowledge_base_ids=["kb"], embedding=vecs[1].tolist(), threshold=-1)), 30)
                kw = await asyncio.wait_for(engine.search(EngineQuery(
                    mode="keyword", knowledge_base_ids=["kb"], text="beavers")), 30)
            assert dense[0].chunk_id == "c1"
            assert {h.chunk_id for h in kw} == {"c0", "c1", "c2"}
        finally:
            await engine.close()
