"""Plugin rules with the spec's numbers: rewrite parsing, rerank cleaning/threshold/composite/MMR, merge
steps, deterministic top-k, input validation."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest

from knora.adapters.llm.rerank_http import HttpReranker
from knora.domain.knowledge import Chunk
from knora.domain.search import SearchResult
from knora.ports.reranker import Reranker
from knora.ports.turn import HistoryTurn
from knora.services.pipeline.deps import PipelineDeps
from knora.services.pipeline.framework import EventManager
from knora.services.pipeline.plugins.extract_entity import parse_graph
from knora.services.pipeline.plugins.filter_top_k import FilterTopK
from knora.services.pipeline.plugins.into_chat_message import validate_input
from knora.services.pipeline.plugins.merge import ChunkMerge
from knora.services.pipeline.plugins.merge_steps import (
    Item,
    group_and_merge,
    history_items,
    remove_partial_overlaps,
)
from knora.services.pipeline.plugins.query_understand import parse_understanding
from knora.services.pipeline.plugins.rerank import ChunkRerank, clean_passage_for_rerank, composite_score, mmr
from knora.services.pipeline.plugins.wiki_boost import WikiBoost
from knora.services.pipeline.state import ChatManage, EventType, PipelineRequest, PipelineState
from knora.services.pipeline.textutil import join_chunk_content, remove_duplicate_results
from tests.fakes import FakeModelServer
from tests.services.pipeline.conftest import make_ctx


def R(id: str, content: str = "", score: float = 0.0, **kw: Any) -> SearchResult:
    return SearchResult(id=id, content=content or f"text of {id}", knowledge_id=kw.pop("knowledge_id", "k1"),
                        score=score, **kw)


def cm_with(**req: Any) -> ChatManage:
    ctx, _ = make_ctx()
    return ChatManage(PipelineRequest(tenant_id=1, session_id="s", request_id="r", query=req.pop("query",
                                                                                                 "q"),
                                      **req), PipelineState(), ctx)


class _Rerankers:
    def __init__(self, r: Reranker | None) -> None:
        self.r = r

    async def get(self, model_id: str | None = None, *, tenant_id: int | None = None) -> Reranker | None:
        return self.r


@pytest.mark.unit
class TestRewriteParsing:
    @pytest.mark.parametrize(("text", "rewrite", "intent"), [
        ('{"rewrite_query": "a b", "intent": "kb_search"}', "a b", "kb_search"),
        ('Sure! {"question": "x y", "intent": "greeting"} hope it helps', "x y", "greeting"),
        ('{"rewritten_query": 5, "query": "z", "intent": ""}', "z", ""),
        ("What is the warranty period of the X200?", "What is the warranty period of the X200?", ""),
        ("", "", ""),
    ])
    def test_tolerant(self, text: str, rewrite: str, intent: str) -> None:
        u = parse_understanding(text, "warranty?")
        assert (u.rewrite, u.intent) == (rewrite, intent)

    def test_multiline_prose_is_not_a_rewrite(self) -> None:
        u = parse_understanding("I think\nthe user wants\nsomething", "q")
        assert u.parsed
        assert u.rewrite == ""

    def test_image_description_and_ocr_merge(self) -> None:
        u = parse_understanding(json.dumps({"image_description": "a chart", "ocr_text": "Q3 revenue"}))
        assert u.image_description == "a chart\n\n[OCR]\nQ3 revenue"
        u = parse_understanding(json.dumps({"image_desc": "shows Q3 revenue", "ocr": "Q3 revenue"}))
        assert u.image_description == "shows Q3 revenue"


@pytest.mark.unit
class TestEntityParsing:
    def test_fenced_and_relations_add_nodes(self) -> None:
        text = 'Here:\n```json\n[{"entity": "Ada"}, {"entity1": "Ada", "entity2": "Babbage", ' \
               '"relation": "w"}, {"entity1": "X", "entity2": "X"}]\n```'
        nodes, rels = parse_graph(text)
        assert [n["name"] for n in nodes] == ["Ada", "Babbage"]
        assert rels == [{"source": "Ada", "target": "Babbage", "relation": "w"}]
        assert parse_graph('noise {"entity": "Solo"} tail')[0][0]["name"] == "Solo"


@pytest.mark.unit
class TestRerankRules:
    def test_cleaning_order(self) -> None:
        text = ("# Title\n```py\ncode()\n```\n$$x^2$$ <b>bold</b> [![alt](i.png)](http://l) ![img](a(1).png) "
                "[link](http://x) see https://raw.example/a\n| a | b |\n|---|---|\n| 1 |  |\n> quote\n"
                "***all*** **strong** *em*\n- item\n1. first\n\n\n\nend")
        assert clean_passage_for_rerank(text) == ("Title\ncode()\nx^2 bold   link see \na, b\n\n1\nquote\n"
                                                  "all strong em\nitem\nfirst\n\nend")

    def test_composite(self) -> None:
        assert composite_score(0.9, 0.0164, web=False) == pytest.approx(0.54 + 0.00492 + 0.1)
        assert composite_score(0.9, 0.0, web=True) == pytest.approx(0.54 + 0.095)
        assert composite_score(2.0, 1.0, web=False) == 1.0

    def test_mmr_penalises_redundancy(self) -> None:
        rs = [R("a", "alpha beta gamma", 0.9), R("b", "alpha beta gamma", 0.89), R("c", "delta epsilon", 0.6)]
        picked = mmr(rs, 2, {})
        assert [r.id for r in picked] == ["a", "c"]

    async def _run(self, fake: FakeModelServer, scores: dict[str, float], results: list[SearchResult],
                   **req: Any) -> tuple[ChatManage, Any]:
        fake.rerank_scorer = lambda q, d: scores.get(d, 0.0)
        reranker = HttpReranker("r", base_url=fake.base_url)
        deps = PipelineDeps(chat_models=None, rerankers=_Rerankers(reranker))  # type: ignore[arg-type]
        m = EventManager()
        m.register(ChunkRerank(deps))
        m.register(WikiBoost())
        cm = cm_with(**req)
        cm.state.search_result = results
        err = await m.trigger(cm, EventType.CHUNK_RERANK)
        await reranker.close()
        return cm, err

    @pytest.mark.integration
    async def test_threshold_composite_and_faq_boost(self, fake: FakeModelServer) -> None:
        results = [R("a", "doc a", 0.01), R("b", "doc b", 0.02, chunk_type="faq"), R("c", "doc c", 0.03)]
        cm, err = await self._run(fake, {"doc a": 0.8, "doc b": 0.5, "doc c": 0.1}, results,
                                  rerank_threshold=0.3, rerank_top_k=10, faq_priority_enabled=True,
                                  faq_score_boost=1.2)
        assert err is None
        got = {r.id: r for r in cm.state.rerank_result}
        assert set(got) == {"a", "b"}
        assert got["a"].score == pytest.approx(0.6 * 0.8 + 0.3 * 0.01 + 0.1)
        assert got["b"].score == pytest.approx(min(1.0, (0.6 * 0.5 + 0.3 * 0.02 + 0.1) * 1.2))
        assert got["a"].metadata["model_score"] == "0.8000"
        assert got["b"].metadata["faq_boosted"] == "true"

    @pytest.mark.integration
    async def test_top1_fallback_and_degraded_retry(self, fake: FakeModelServer) -> None:
        results = [R("a", "doc a", 0.5), R("b", "doc b", 0.5)]
        cm, err = await self._run(fake, {"doc a": 0.2, "doc b": 0.16}, results, rerank_threshold=0.3)
        assert err is None
        assert [r.id for r in cm.state.rerank_result] == ["a"]  # top-1 ≥ 0.15
        cm, err = await self._run(fake, {"doc a": 0.1, "doc b": 0.05}, results, rerank_threshold=0.3)
        assert err is not None
        assert err.is_search_nothing  # below 0.15, no retry since 0.3 is not > 0.3
        cm, err = await self._run(fake, {"doc a": 0.36, "doc b": 0.1}, results, rerank_threshold=0.5)
        assert [r.id for r in cm.state.rerank_result] == ["a"]  # retry at max(0.35, 0.3)

    @pytest.mark.integration
    async def test_api_error_falls_back_to_search_results_and_wiki_boost_runs_after(
            self, fake: FakeModelServer) -> None:
        fake.rerank_status = 500
        cm, err = await self._run(fake, {}, [R("a", "doc a", 0.5)], rerank_threshold=0.3)
        assert err is None
        assert cm.state.rerank_result == []
        fake.rerank_status = 200
        results = [R("a", "doc a", 0.0), R("w", "wiki w", 0.0, chunk_type="wiki_page")]
        cm, err = await self._run(fake, {"doc a": 0.9, "wiki w": 0.8}, results, rerank_threshold=0.3,
                                  wiki_kb_ids=("kb",))
        assert [r.id for r in cm.state.rerank_result] == ["w", "a"]  # 0.58*1.3 > 0.64


@pytest.mark.unit
class TestMergeSteps:
    def test_dedup_by_id_then_signature(self) -> None:
        out = remove_duplicate_results([R("a", "Same  Text"), R("a", "other"), R("b", "same text"),
                                        R("c", "x")])
        assert [r.id for r in out] == ["a", "c"]

    def test_history_references_are_weakened_and_capped(self) -> None:
        refs = [R(f"h{i}", "solar panel output watts", 0.5).model_dump() for i in range(5)]
        refs.append(R("far", "unrelated tea text", 0.5).model_dump())
        hist = [HistoryTurn(query="q1", answer="a1", references=refs), HistoryTurn(query="q2", answer="a2")]
        items = history_items(hist, {"h0"}, "solar panel watts")
        assert [i.r.id for i in items] == ["h1", "h2", "h3"]
        assert items[0].r.score == pytest.approx(0.3)
        assert items[0].r.match_type == 3
        assert items[0].r.metadata["history_similarity"] == "0.75"

    def test_sequential_merge_extend_and_join(self) -> None:
        text = "0123456789abcdefghijKLMNOPQRSTUVWXYZ"
        a = R("a", text[0:20], 0.5, chunk_index=0, start_at=0, end_at=20)
        b = R("b", text[14:36], 0.7, chunk_index=1, start_at=14, end_at=36)
        far = R("c", "far away text", 0.1, chunk_index=9, start_at=900, end_at=913)
        out = group_and_merge([Item.of(r) for r in (b, far, a)])
        assert [i.r.id for i in out] == ["a", "c"]
        assert out[0].r.content == text
        assert out[0].r.score == 0.7
        assert out[0].sub_ids == ["b"]

    def test_neighbours_on_other_pages_or_slides_stay_passages_of_their_own(self) -> None:
        def chunk(cid: str, index: int, start: int, page: int, kind: str = "page") -> SearchResult:
            return R(cid, "x" * 10, 0.5, chunk_index=index, start_at=start, end_at=start + 10,
                     chunk_metadata={"page_kind": kind, "page": page})

        a, b, c = chunk("a", 0, 0, 2), chunk("b", 1, 8, 2), chunk("c", 2, 12, 3)
        out = group_and_merge([Item.of(r) for r in (a, b, c)])
        assert sorted((i.r.id, i.sub_ids) for i in out) == [("a", ["b"]), ("c", [])]  # same page merges
        assert [i.r.chunk_metadata for i in out if i.r.id == "a"] == [{"page_kind": "page", "page": 2}]
        slides = [chunk("s1", 0, 0, 1, "slide"), chunk("s2", 1, 12, 2, "slide")]
        slides[1].start_at = 5  # even overlapping neighbours (a join) stay apart across slides
        assert len(group_and_merge([Item.of(r) for r in slides])) == 2

    def test_join_chunk_content_overlap(self) -> None:
        assert join_chunk_content("hello big world", "big world again") == \
            "hello big world\n\nbig world again"  # an overlap of 9 runes is below the 12-rune minimum
        assert join_chunk_content("aaa the long overlap here", "the long overlap here bbb") == \
            "aaa the long overlap here bbb"

    def test_partial_overlap_keeps_higher_scoring_short(self) -> None:
        long = R("l", "the quick brown fox jumps over the lazy dog", 0.4)
        short = R("s", "quick brown fox", 0.9)
        assert [i.r.id for i in remove_partial_overlaps([Item.of(long), Item.of(short)])] == ["s"]
        short.score = 0.1
        assert [i.r.id for i in remove_partial_overlaps([Item.of(long), Item.of(short)])] == ["l"]


class _Reads:
    def __init__(self, chunks: Sequence[Chunk]) -> None:
        self.by_id = {c.id: c for c in chunks}

    async def chunks(self, ids: Sequence[str]) -> list[Chunk]:
        return [self.by_id[i] for i in ids if i in self.by_id]

    async def knowledge(self, ids: Sequence[str]) -> list[Any]:
        return []

    async def knowledge_bases(self, ids: Sequence[str]) -> list[Any]:
        return []


def _chunk(cid: str, text: str, idx: int, **kw: Any) -> Chunk:
    return Chunk(id=cid, tenant_id=1, knowledge_base_id="kb", knowledge_id=kw.pop("knowledge_id", "k1"),
                 content=text, chunk_index=idx, **kw)


@pytest.mark.unit
class TestChunkMergePlugin:
    async def test_parent_faq_and_neighbour_expansion(self) -> None:
        parent = _chunk("p", "PARENT intro. child body sentence here.", 0, chunk_type="parent_text")
        child = R("ch", "child body sentence here.", 0.9, parent_chunk_id="p", knowledge_id="k2")
        faq = _chunk("f", "q", 0, chunk_type="faq", metadata={"standard_question": "How?",
                                                             "answers": [" Like this. ", ""]})
        n1 = _chunk("n1", "B" * 200, 1, pre_chunk_id="", next_chunk_id="n2", knowledge_id="k3")
        n2 = _chunk("n2", "C" * 100, 2, pre_chunk_id="n1", next_chunk_id="n3", knowledge_id="k3")
        n3 = _chunk("n3", "D" * 200, 3, pre_chunk_id="n2", knowledge_id="k3")
        short = R("n2", "C" * 100, 0.8, knowledge_id="k3", chunk_index=2)
        deps = PipelineDeps(chat_models=None, rerankers=None,  # type: ignore[arg-type]
                            reads=_Reads([parent, faq, n1, n2, n3]))
        m = EventManager()
        m.register(ChunkMerge(deps))
        cm = cm_with()
        cm.state.rerank_result = [child, R("f", "q", 0.7, chunk_type="faq", knowledge_id="k4"), short]
        assert await m.trigger(cm, EventType.CHUNK_MERGE) is None
        got = {r.id: r for r in cm.state.merge_result}
        assert got["ch"].content == "PARENT intro. child body sentence here."
        assert got["f"].content == "Q: How?\nAnswer:\n- Like this."
        assert got["n2"].content == "B" * 200 + "\n\n" + "C" * 100 + "\n\n" + "D" * 200
        assert got["n2"].sub_chunk_id == ["n1", "n3"]


@pytest.mark.unit
class TestFilterTopK:
    async def test_deterministic_order_then_truncate(self) -> None:
        m = EventManager()
        m.register(FilterTopK())
        cm = cm_with(rerank_top_k=3)
        cm.state.merge_result = [R("z", score=0.5, knowledge_id="b"), R("y", score=0.5, knowledge_id="a",
                                 chunk_index=2), R("x", score=0.5, knowledge_id="a", chunk_index=1),
                                 R("w", score=0.9, knowledge_id="c"), R("v", score=0.1)]
        await m.trigger(cm, EventType.FILTER_TOP_K)
        assert [r.id for r in cm.state.merge_result] == ["w", "x", "y"]


@pytest.mark.unit
@pytest.mark.parametrize(("text", "ok"), [("normal question?", True), ("tab\tok\n", True),
                                          ("<script>alert(1)</script>", False), ("a\x00b", False),
                                          ("click javascript:void", False), ("<img onerror = x>", False)])
def test_validate_input(text: str, ok: bool) -> None:
    assert (validate_input(text) is not None) is ok
