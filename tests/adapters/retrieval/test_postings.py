"""The in-memory BM25 index against FTS5's own bm25(): same top-k, same scores (bit for bit), every filter,
and consistency with other writers through the change log."""

from __future__ import annotations

import math
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from knora.adapters.retrieval import postings
from knora.adapters.retrieval import tokenize as tok
from knora.adapters.retrieval.postings import KeywordFilter, KeywordIndex
from knora.adapters.retrieval.sqlite import SqliteEngine
from knora.domain.search import IndexRow, MatchType
from knora.ports.retrieval import EngineQuery

pytestmark = pytest.mark.integration

EN = [f"w{i}" for i in range(400)]
ZH = ["北京", "大学", "学生", "读书", "中国", "科学", "技术", "发展", "经济", "社会", "文化", "历史", "人民",
      "政府", "城市", "工作", "研究", "数据", "模型", "检索", "问题", "答案", "知识", "系统", "语言"]


def zipf(n: int) -> np.ndarray:
    p = 1 / np.arange(1, n + 1)
    return p / p.sum()


def make_text(rng: np.random.Generator) -> str:
    n = int(rng.integers(0, 40))
    if rng.random() < 0.35:  # Chinese text (jieba search mode at index and query time), sometimes mixed
        words = rng.choice(ZH, size=max(1, n // 2), p=zipf(len(ZH)))
        text = "".join(words)
        return text + (" " + " ".join(rng.choice(EN, size=3)) if rng.random() < 0.3 else "")
    return " ".join(rng.choice(EN, size=n, p=zipf(len(EN))))


def make_rows(rng: np.random.Generator, n: int, start: int = 0) -> list[IndexRow]:
    out = []
    for i in range(start, start + n):
        out.append(IndexRow(
            source_id=f"s{i}", chunk_id=f"c{i}", knowledge_id=f"k{int(rng.integers(0, 12))}",
            knowledge_base_id=f"kb{int(rng.integers(0, 3))}", tenant_id=1, content=make_text(rng),
            tag_id=[None, "t1", "t2"][int(rng.integers(0, 3))], is_recommended=bool(rng.random() < 0.7),
            knowledge_type="faq" if rng.random() < 0.1 else "document"))
    return out


def make_query(rng: np.random.Generator) -> str:
    if rng.random() < 0.3:
        return "".join(rng.choice(ZH, size=int(rng.integers(1, 4)), p=zipf(len(ZH))))
    words = list(rng.choice(EN, size=int(rng.integers(1, 7)), p=zipf(len(EN))))
    if rng.random() < 0.3:
        words.append("absentword")
    return " ".join(words)


def fts5_reference(path: Path, q: EngineQuery) -> list[tuple[str, float]]:
    """What FTS5 itself says: MATCH over every query term (query order, no pruning), bm25(), the engine's
    filters and normalisation (Σ idf over the distinct query terms, from FTS5's own counts), best first, no
    LIMIT."""
    terms = tok.query_terms(q.text)
    conn = sqlite3.connect(path)
    try:
        n_rows = conn.execute("SELECT count(*) FROM knora_ret_fts").fetchone()[0]
        norm = 0.0
        for t in terms:
            row = conn.execute("SELECT doc FROM knora_ret_vocab WHERE term = ?", (t,)).fetchone()
            idf = math.log((n_rows - (row[0] if row else 0) + 0.5) / ((row[0] if row else 0) + 0.5))
            norm += idf if idf > 0 else 1e-6
        where = ["knora_ret_fts MATCH ?", "r.is_enabled = 1", "r.knowledge_type = ?"]
        params: list[Any] = [tok.fts5_match(terms), q.knowledge_type]
        for col, vals in (("r.kb_id", q.knowledge_base_ids), ("r.knowledge_id", q.knowledge_ids),
                          ("r.tag_id", q.tag_ids)):
            if vals:
                where.append(f"{col} IN ({','.join('?' * len(vals))})")
                params.extend(vals)
        if q.only_recommended:
            where.append("r.is_recommended = 1")
        rows = conn.execute("SELECT r.chunk_id, -bm25(knora_ret_fts) FROM knora_ret_fts"
                            " JOIN knora_ret_rows r"
                            f" ON r.id = knora_ret_fts.rowid WHERE {' AND '.join(where)}"
                            f" ORDER BY bm25(knora_ret_fts)", params).fetchall()
    finally:
        conn.close()
    out = [(c, max(s, 0.0) / norm) for c, s in rows if s >= q.threshold * norm]
    return out


def assert_same_top(got: list[tuple[str, float]], ref: list[tuple[str, float]], k: int) -> None:
    """Same scores in the same order (exactly), and the same rows — up to rows tied with the k-th score."""
    want = ref[:k]
    assert [s for _, s in got] == [s for _, s in want]
    ref_score = dict(ref)
    for c, s in got:
        assert ref_score[c] == s
    if want:
        last = want[-1][1]
        assert {c for c, s in got if s > last} == {c for c, s in want if s > last}


def random_query(rng: np.random.Generator, **kw: Any) -> EngineQuery:
    kbs = [f"kb{i}" for i in range(3) if rng.random() < 0.6] or ["kb0"]
    return EngineQuery(
        mode="keyword", knowledge_base_ids=kbs, text=make_query(rng),
        knowledge_ids=[f"k{int(rng.integers(0, 12))}" for _ in range(3)] if rng.random() < 0.2 else [],
        tag_ids=["t1"] if rng.random() < 0.15 else [],
        top_k=int(rng.choice([1, 3, 10, 50])), threshold=float(rng.choice([0.0, 0.05, 0.3, 0.6])),
        knowledge_type="faq" if rng.random() < 0.1 else "document", only_recommended=bool(rng.random() < 0.2),
        **kw)


async def check_against_fts(eng: SqliteEngine, path: Path, rng: np.random.Generator, n: int) -> None:
    for _ in range(n):
        q = random_query(rng)
        hits = await eng.search(q)
        assert all(h.match_type == MatchType.KEYWORDS for h in hits)
        assert_same_top([(h.chunk_id, h.score) for h in hits], fts5_reference(path, q), q.top_k)


@pytest.fixture(params=["auto", "pruned", "dense"])
def scoring(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "pruned":
        monkeypatch.setattr(postings, "_DENSE_SHARE", float("inf"))  # never fall back to scoring every row
    elif request.param == "dense":
        monkeypatch.setattr(KeywordIndex, "_top", lambda self, terms, k, cut, mask, avgdl:
                            self._dense(terms, k, cut, mask, avgdl))
    return str(request.param)


class TestExactAgainstFTS5:
    async def test_random_corpora(self, tmp_path: Path, scoring: str) -> None:
        for seed in (1, 2):
            rng = np.random.default_rng(seed)
            path = tmp_path / f"k{seed}.db"
            eng = SqliteEngine(path)
            await eng.start()
            try:
                await eng.index(make_rows(rng, 1500))
                await check_against_fts(eng, path, rng, 60)
                assert eng._kw_index is not None
                assert len(eng._kw_index) == 1500
            finally:
                await eng.close()

    async def test_bit_exact_raw_scores(self, tmp_path: Path) -> None:
        """The index's raw BM25 equals FTS5's -bm25() bit for bit (same operations in the same order)."""
        rng = np.random.default_rng(5)
        path = tmp_path / "k.db"
        eng = SqliteEngine(path)
        await eng.start()
        try:
            await eng.index(make_rows(rng, 800))
            await eng.warm_keyword()
            idx = eng._kw_index
            assert idx is not None
            conn = sqlite3.connect(path)
            for _ in range(30):
                terms = tok.query_terms(make_query(rng))
                ids = dict(conn.execute(f"SELECT term, id FROM knora_ret_terms WHERE term IN"
                                        f" ({','.join('?' * len(terms))})", terms).fetchall())
                found, _ = idx.search([ids.get(t) for t in terms], 10_000, 0.0,
                                      KeywordFilter(knowledge_base_ids=["kb0", "kb1", "kb2"],
                                                    knowledge_type="document"))
                ref = dict(conn.execute(
                    "SELECT rowid, -bm25(knora_ret_fts) FROM knora_ret_fts WHERE knora_ret_fts MATCH ?",
                    (tok.fts5_match(terms),)).fetchall())
                for rid, s in found:
                    assert ref[rid] == s
            conn.close()
        finally:
            await eng.close()


async def two_processes(path: Path) -> tuple[SqliteEngine, SqliteEngine]:
    """The server's engine and the CLI's, started on one database file."""
    server, cli = SqliteEngine(path), SqliteEngine(path)
    await server.start()
    await cli.start()
    return server, cli


class TestFollowsTheLog:
    async def test_other_writer_upserts_deletes_disables(self, tmp_path: Path) -> None:
        rng = np.random.default_rng(3)
        path = tmp_path / "k.db"
        server, cli = await two_processes(path)
        try:
            await cli.index(make_rows(rng, 600))
            await check_against_fts(server, path, rng, 10)
            loaded = server._kw_index
            assert loaded is not None
            await cli.index(make_rows(rng, 200, start=600))  # new rows
            await cli.index(make_rows(rng, 50, start=550))  # re-index existing sources (row ids are reused)
            await cli.delete_chunks([f"c{i}" for i in range(0, 100, 3)])
            await cli.set_enabled([f"c{i}" for i in range(100, 200)], False)
            await check_against_fts(server, path, rng, 25)
            await cli.set_enabled([f"c{i}" for i in range(100, 150)], True)
            await cli.delete_knowledge(["k3"])
            await cli.delete_knowledge_base("kb1")
            await server.warm_keyword()  # catches up with the log without a query
            assert server._kw_index is loaded
            assert loaded.seq == SqliteEngine._head(sqlite3.connect(path))
            for i in range(12):  # many small batches: segments are merged
                await cli.index(make_rows(rng, 5, start=1000 + 5 * i))
            await check_against_fts(server, path, rng, 25)
            assert server._kw_index is loaded  # replayed from the change log, not reloaded
            assert loaded.segments <= 9
            n = sqlite3.connect(path).execute("SELECT count(*) FROM knora_ret_rows").fetchone()[0]
            assert len(loaded) == n
        finally:
            await server.close()
            await cli.close()

    async def test_background_load_fts_answers_meanwhile(self, tmp_path: Path) -> None:
        rng = np.random.default_rng(4)
        path = tmp_path / "k.db"
        eng = SqliteEngine(path, kw_sync_rows=0)  # every load in the background
        await eng.start()
        try:
            await eng.index(make_rows(rng, 300))
            q = EngineQuery(mode="keyword", knowledge_base_ids=["kb0", "kb1", "kb2"], text="w1 w7 w40",
                            top_k=5)
            first = await eng.search(q)  # FTS5 (the load has just started)
            await eng.warm_keyword()
            assert eng.keyword_index_info()["ready"]
            again = await eng.search(q)
            assert [h.chunk_id for h in again] == [h.chunk_id for h in first]
            assert [h.score for h in again] == pytest.approx([h.score for h in first], rel=1e-12)
        finally:
            await eng.close()

    async def test_trimmed_log_reloads(self, tmp_path: Path) -> None:
        rng = np.random.default_rng(6)
        path = tmp_path / "k.db"
        server, cli = await two_processes(path)
        try:
            await cli.index(make_rows(rng, 200))
            await check_against_fts(server, path, rng, 3)
            old = server._kw_index
            await cli.index(make_rows(rng, 100, start=200))
            conn = sqlite3.connect(path)
            conn.execute("DELETE FROM knora_ret_log WHERE seq < (SELECT max(seq) FROM knora_ret_log)")
            conn.commit()
            conn.close()
            await check_against_fts(server, path, rng, 10)  # FTS5 or the reloaded index: both exact here
            await server.warm_keyword()
            assert server._kw_index is not None
            assert server._kw_index is not old
            assert len(server._kw_index) == 300
            await check_against_fts(server, path, rng, 10)
        finally:
            await server.close()
            await cli.close()

    async def test_file_from_before_the_index_is_backfilled(self, tmp_path: Path) -> None:
        rng = np.random.default_rng(7)
        path = tmp_path / "k.db"
        eng = SqliteEngine(path)
        await eng.start()
        await eng.index(make_rows(rng, 400))
        await eng.close()
        conn = sqlite3.connect(path)  # as an older version wrote it: no token-id blobs, no term dictionary
        conn.execute("DROP TABLE knora_ret_kw")
        conn.execute("DROP TABLE knora_ret_terms")
        conn.commit()
        conn.close()
        eng = SqliteEngine(path)
        await eng.start()
        try:
            await check_against_fts(eng, path, rng, 20)
            assert eng._kw_index is not None
            assert len(eng._kw_index) == 400
            conn = sqlite3.connect(path)
            assert conn.execute("SELECT count(*) FROM knora_ret_kw").fetchone()[0] == 400
            conn.close()
        finally:
            await eng.close()


class TestKeywordIndexUnit:
    pytestmark = pytest.mark.unit

    def test_meta_update_keeps_slot_and_replace_moves_it(self) -> None:
        blob = postings.encode([1, 2, 2])
        rows = [(1, "kb", "k", None, 1, 1, "document", blob), (2, "kb", "k", "t", 1, 1, "document",
                                                               postings.encode([2]))]
        idx = KeywordIndex.load([rows])
        flt = KeywordFilter(knowledge_base_ids=["kb"])
        top, norm = idx.search([2], 10, 0.0, flt)
        assert [r for r, _ in top] == [2, 1]
        assert norm > 0
        idx.upsert([(2, "kb", "k", "t", 0, 1, "document", postings.encode([2]))])  # disabled, same tokens
        assert idx.segments == 1
        assert [r for r, _ in idx.search([2], 10, 0.0, flt)[0]] == [1]
        idx.upsert([(1, "kb", "k", None, 1, 1, "document", postings.encode([3]))])  # new content
        assert idx.segments == 2
        assert idx.search([2], 10, 0.0, flt)[0] == []
        assert [r for r, _ in idx.search([3], 10, 0.0, flt)[0]] == [1]
        idx.remove([1, 2])
        assert len(idx) == 0
        assert idx.search([3], 10, 0.0, flt) == ([], 0.0)

    def test_empty_rows_count_in_the_statistics(self) -> None:
        idx = KeywordIndex.load([[(1, "kb", "k", None, 1, 1, "document", b""),
                                  (2, "kb", "k", None, 1, 1, "document", postings.encode([5]))]])
        (rid, s), = idx.search([5], 10, 0.0, KeywordFilter(knowledge_base_ids=["kb"]))[0]
        # N = 2, df = 1 → idf = log(1.5/1.5) = 0 → clamped; avgdl = 0.5
        assert rid == 2
        assert s == 1e-6 * ((1 * 2.2) / (1 + 1.2 * (0.25 + (0.75 * 1) / 0.5)))
