"""The RetrievalEngine contract, run against every engine (SQLite always; PostgreSQL+pgvector when marked)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from knora.domain.search import IndexRow, MatchType
from knora.ports.retrieval import EngineQuery, RetrievalEngine

DIM = 8


def vec(*hot: int, noise: float = 0.0) -> list[float]:
    v = np.zeros(DIM, dtype=np.float32)
    for h in hot:
        v[h] = 1.0
    v[-1] += noise
    return (v / np.linalg.norm(v)).tolist()


def row(source: str, content: str, *, kb: str = "kb1", knowledge: str = "k1", chunk: str | None = None,
        emb: list[float] | None = None, **kw: Any) -> IndexRow:
    return IndexRow(source_id=source, chunk_id=chunk or source, knowledge_id=knowledge, knowledge_base_id=kb,
                    tenant_id=1, content=content, embedding=emb, **kw)


CORPUS = [
    row("c1", "The quick brown fox jumps over the lazy dog", emb=vec(0)),
    row("c2", "Foxes are running through the forest at night", emb=vec(0, 1)),
    row("c3", "北京大学是中国著名的高等学府", emb=vec(2), knowledge="k2"),
    row("c4", "上海是中国最大的城市之一", emb=vec(3), knowledge="k2", tag_id="t1"),
    row("c5", "Databases store rows and columns", emb=vec(4), kb="kb2", knowledge="k3"),
]


def kq(text: str, **kw: Any) -> EngineQuery:
    kw.setdefault("knowledge_base_ids", ["kb1"])
    return EngineQuery(mode="keyword", text=text, **kw)


def vq(v: list[float], **kw: Any) -> EngineQuery:
    kw.setdefault("knowledge_base_ids", ["kb1"])
    return EngineQuery(mode="vector", embedding=v, **kw)


def ids(hits: list[Any]) -> list[str]:
    return [h.chunk_id for h in hits]


@pytest.fixture
async def loaded(engine: RetrievalEngine) -> RetrievalEngine:
    await engine.index(CORPUS)
    return engine


class TestEngineContract:
    async def test_declares_capabilities(self, engine: RetrievalEngine) -> None:
        assert isinstance(engine, RetrievalEngine)
        assert engine.capabilities == {"vector", "keyword"}

    async def test_english_keyword_is_stemmed(self, loaded: RetrievalEngine) -> None:
        hits = await loaded.search(kq("running foxes"))
        assert ids(hits)[0] == "c2"
        assert set(ids(hits)) == {"c1", "c2"}  # "fox" in c1 matches the stem of "foxes"
        assert all(h.match_type == MatchType.KEYWORDS and 0 < h.score < 1 for h in hits)
        assert hits[0].score >= hits[1].score
        assert hits[0].content.startswith("Foxes")

    async def test_chinese_keyword_uses_jieba(self, loaded: RetrievalEngine) -> None:
        assert ids(await loaded.search(kq("北京大学"))) == ["c3"]
        assert ids(await loaded.search(kq("上海的城市"))) == ["c4"]

    async def test_query_with_spaces_or_punctuation_only_matches_nothing(self,
                                                                         loaded: RetrievalEngine) -> None:
        assert await loaded.search(kq("   ")) == []
        assert await loaded.search(kq(" ,.!? ；。")) == []
        assert await loaded.search(kq("")) == []
        # a space between words is a separator, not a term
        assert ids(await loaded.search(kq("lazy  dog"))) == ["c1"]

    async def test_unicode_forms_and_emoji_are_searchable(self, engine: RetrievalEngine) -> None:
        """Issue 20 item 11: composed and decomposed forms (and PDF ligatures) meet; an emoji is a term."""
        await engine.index([row("u1", "Gr\u00fc\u00dfe aus M\u00fcnchen", emb=vec(0)),
                            row("u2", "Party \U0001F600 notes, \ufb01nance plan", emb=vec(1)),
                            row("u3", "a plain row", emb=vec(2))])
        assert ids(await engine.search(kq("Mu\u0308nchen"))) == ["u1"]  # decomposed query, composed text
        assert ids(await engine.search(kq("\U0001F600"))) == ["u2"]
        assert ids(await engine.search(kq("finance"))) == ["u2"]  # the "fi" ligature in the text

    async def test_operators_in_query_are_plain_terms(self, loaded: RetrievalEngine) -> None:
        assert await loaded.search(kq('NOT "fox" OR * NEAR(')) != []  # no syntax error; "fox" still matches
        assert await loaded.search(kq("'; DROP TABLE x; --")) == []

    async def test_vector_search_cosine_and_top_k(self, loaded: RetrievalEngine) -> None:
        hits = await loaded.search(vq(vec(0), top_k=2))
        assert ids(hits) == ["c1", "c2"]
        assert hits[0].score == pytest.approx(1.0, abs=1e-4)
        assert hits[1].score == pytest.approx(1 / np.sqrt(2), abs=1e-3)
        assert all(h.match_type == MatchType.EMBEDDING for h in hits)

    async def test_vector_threshold(self, loaded: RetrievalEngine) -> None:
        hits = await loaded.search(vq(vec(0), threshold=0.9))
        assert ids(hits) == ["c1"]

    async def test_keyword_threshold(self, loaded: RetrievalEngine) -> None:
        all_hits = await loaded.search(kq("fox running forest night"))
        assert len(all_hits) == 2
        cut = (all_hits[0].score + all_hits[1].score) / 2
        assert ids(await loaded.search(kq("fox running forest night",
                                          threshold=cut))) == [all_hits[0].chunk_id]
        assert await loaded.search(kq("fox unicorn zebra", threshold=0.9)) == []

    async def test_filters(self, loaded: RetrievalEngine) -> None:
        assert set(ids(await loaded.search(vq(vec(2), knowledge_ids=["k2"], threshold=-1)))) == {"c3", "c4"}
        assert ids(await loaded.search(vq(vec(2), tag_ids=["t1"], threshold=-1))) == ["c4"]
        assert ids(await loaded.search(kq("中国", tag_ids=["t1"]))) == ["c4"]
        assert ids(await loaded.search(kq("databases"))) == []
        assert ids(await loaded.search(kq("databases", knowledge_base_ids=["kb1", "kb2"]))) == ["c5"]
        assert ids(await loaded.search(vq(vec(4), knowledge_base_ids=["kb2"]))) == ["c5"]

    async def test_knowledge_type_and_recommended(self, engine: RetrievalEngine) -> None:
        await engine.index([row("f1", "how do I reset my password", emb=vec(5), knowledge_type="faq"),
                            row("f2", "password reset for admins", emb=vec(5, 6), knowledge_type="faq",
                                is_recommended=False),
                            row("d1", "password policy document", emb=vec(5))])
        assert ids(await engine.search(vq(vec(5)))) == ["d1"]
        assert ids(await engine.search(vq(vec(5), knowledge_type="faq"))) == ["f1", "f2"]
        assert ids(await engine.search(vq(vec(5), knowledge_type="faq", only_recommended=True))) == ["f1"]
        assert ids(await engine.search(kq("password"))) == ["d1"]

    async def test_upsert_replaces_by_source_id(self, loaded: RetrievalEngine) -> None:
        await loaded.index([row("c1", "Completely different text about penguins", emb=vec(6))])
        assert await loaded.search(kq("lazy dog")) == []
        assert ids(await loaded.search(kq("penguins"))) == ["c1"]
        assert ids(await loaded.search(vq(vec(6), threshold=0.9))) == ["c1"]
        assert "c1" not in ids(await loaded.search(vq(vec(0), threshold=0.9)))

    async def test_several_rows_per_chunk(self, engine: RetrievalEngine) -> None:
        await engine.index([row("q-1", "what is a fox", chunk="faq1", emb=vec(0)),
                            row("q-2", "tell me about foxes", chunk="faq1", emb=vec(0, 1))])
        hits = await engine.search(vq(vec(0)))
        assert [h.source_id for h in hits] == ["q-1", "q-2"]
        assert set(ids(hits)) == {"faq1"}
        await engine.delete_chunks(["faq1"])
        assert await engine.search(vq(vec(0))) == []

    async def test_delete_by_chunk_knowledge_and_kb(self, loaded: RetrievalEngine) -> None:
        await loaded.search(vq(vec(0)))  # warm caches so deletes must invalidate them
        await loaded.delete_chunks(["c1"])
        assert ids(await loaded.search(vq(vec(0), threshold=0.5))) == ["c2"]
        assert ids(await loaded.search(kq("lazy dog"))) == []
        await loaded.delete_knowledge(["k2"])
        assert await loaded.search(kq("中国")) == []
        assert await loaded.search(vq(vec(2), threshold=0.5)) == []
        await loaded.delete_knowledge_base("kb2")
        assert await loaded.search(kq("databases", knowledge_base_ids=["kb2"])) == []
        assert await loaded.search(vq(vec(4), knowledge_base_ids=["kb2"])) == []
        assert ids(await loaded.search(kq("forest"))) == ["c2"]

    async def test_set_enabled(self, loaded: RetrievalEngine) -> None:
        await loaded.search(vq(vec(0)))
        await loaded.set_enabled(["c1"], False)
        assert "c1" not in ids(await loaded.search(vq(vec(0))))
        assert "c1" not in ids(await loaded.search(kq("fox")))
        await loaded.set_enabled(["c1"], True)
        assert ids(await loaded.search(vq(vec(0))))[0] == "c1"

    async def test_top_k_zero_and_dimension_mismatch(self, loaded: RetrievalEngine) -> None:
        assert await loaded.search(vq(vec(0), top_k=0)) == []
        assert await loaded.search(vq([1.0, 0.0, 0.0])) == []
        assert await loaded.search(vq(vec(0), knowledge_base_ids=["nope"])) == []

    async def test_keyword_only_rows(self, engine: RetrievalEngine) -> None:
        await engine.index([row("n1", "rows without vectors are still keyword searchable", emb=None)])
        assert ids(await engine.search(kq("searchable"))) == ["n1"]
        assert await engine.search(vq(vec(0))) == []

    async def test_index_is_atomic(self, engine: RetrievalEngine) -> None:
        bad = [row("a1", "first fine row", emb=vec(0)), row("a2", "second row, broken vector",
                                                            emb=[float("nan")] * 3)]
        bad[1].embedding = None
        bad[1].knowledge_base_id = None  # type: ignore[assignment]
        with pytest.raises(Exception):  # noqa: B017, PT011 - any driver error; what matters is nothing was written
            await engine.index(bad)
        assert await engine.search(kq("first fine row")) == []
