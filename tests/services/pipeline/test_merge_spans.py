"""chunk_merge keeps the map from a merged passage back to each source chunk (``SearchResult.spans``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from knora.domain.knowledge import Chunk, ChunkingConfig
from knora.domain.search import ChunkSpan, SearchResult
from knora.services.citations.registry import ReferenceRegistry
from knora.services.ingest.chunker import split_document
from knora.services.pipeline.deps import PipelineDeps
from knora.services.pipeline.framework import EventManager
from knora.services.pipeline.plugins.merge import ChunkMerge
from knora.services.pipeline.plugins.merge_spans import SourcePart, locate, parts_of, spans_for
from knora.services.pipeline.plugins.merge_steps import Item, group_and_merge
from knora.services.pipeline.state import ChatManage, EventType, PipelineRequest, PipelineState
from tests.services.pipeline.conftest import make_ctx

pytestmark = pytest.mark.unit

DOC = "kkkkkkkk-0000-0000-0000-000000000001"


def _hit(i: int, content: str, start: int, end: int, score: float = 0.5,
         page: int | None = None) -> SearchResult:
    meta = {"page": page} if page is not None else None
    return SearchResult(id=f"chunk-{i}", content=content, knowledge_id=DOC, chunk_index=i, start_at=start,
                        end_at=end, score=score, chunk_metadata=meta)


def _check(r: SearchResult, texts: dict[str, str]) -> None:
    """Every span's text is its chunk's text (a cut last chunk: a prefix of it)."""
    assert r.spans, "a merged passage carries its spans"
    for s in r.spans:
        piece = r.content[s.start:s.end]
        assert piece, s
        assert texts[s.chunk_id].startswith(piece), (s, piece)


def test_overlapping_chunks_merged_by_offsets_map_back_to_each_chunk() -> None:
    text = ("The pump was designed in Oslo. It has a steel housing and two inlets. "
            "The pump weighs 41 kilograms when empty. Its motor draws 2.2 kW at full load. "
            "Service is due every 18 months, or after 4000 hours.")
    drafts = split_document(text, ChunkingConfig(chunk_size=80, chunk_overlap=20))
    assert len(drafts) >= 3
    hits = [_hit(d.chunk_index, d.content, d.start_at, d.end_at) for d in drafts]
    [merged] = [i.result() for i in group_and_merge(Item.of(h) for h in hits)]
    assert merged.id == "chunk-0"
    assert merged.content == text[:drafts[-1].end_at]
    texts = {h.id: h.content for h in hits}
    _check(merged, texts)
    assert [s.chunk_id for s in merged.spans] == [h.id for h in hits]
    weighs = merged.content.index("weighs 41")
    holder = [s.chunk_id for s in merged.spans if s.start <= weighs < s.end]
    assert holder
    assert all("weighs 41" in texts[c] for c in holder)


def test_adjacent_chunks_joined_without_offsets_are_mapped_after_the_separator() -> None:
    a = _hit(0, "第一段：水泵在奥斯陆设计。外壳为钢制。", 0, 0)
    b = _hit(1, "第二段：水泵空载重41公斤。电机满载功率2.2千瓦。", 0, 0, score=0.9)
    [merged] = [i.result() for i in group_and_merge([Item.of(a), Item.of(b)])]
    assert merged.content == a.content + "\n\n" + b.content
    assert [(s.chunk_id, s.start, s.end) for s in merged.spans] == [
        ("chunk-0", 0, len(a.content)), ("chunk-1", len(a.content) + 2, len(merged.content))]


def test_an_unmerged_passage_has_no_spans_and_the_wire_shape_is_unchanged() -> None:
    r = _hit(3, "Only one chunk here.", 0, 20)
    out = Item.of(r).result()
    assert out.spans == []
    assert "spans" not in out.model_dump()
    assert '"spans"' not in out.model_dump_json()


def test_a_passage_cut_at_the_cap_maps_the_cut_chunk_to_what_is_left() -> None:
    parts = [SourcePart("a", "Alpha sentence one is here.", 0),
             SourcePart("b", "Beta sentence two is longer.", 1)]
    text = "Alpha sentence one is here.\n\nBeta sentence t"
    assert [(s.chunk_id, s.start, s.end) for s in locate(text, parts)] == [("a", 0, 27), ("b", 29, len(text))]


def test_a_merged_history_reference_keeps_its_spans_through_another_merge() -> None:
    spans = [ChunkSpan(chunk_id="x", start=0, end=5, location="p. 2"),
             ChunkSpan(chunk_id="y", start=7, end=12)]
    r = SearchResult(id="x", content="aaaaa\n\nbbbbb", knowledge_id=DOC, spans=spans)
    assert [(p.chunk_id, p.content, p.location) for p in parts_of(r)] == [("x", "aaaaa", "p. 2"),
                                                                          ("y", "bbbbb", "")]
    assert spans_for(r, parts_of(r)) == spans


def test_page_of_each_source_chunk_travels_in_its_span() -> None:
    a = _hit(0, "Page one text.", 0, 0, page=1)
    b = _hit(1, "Also page one.", 0, 0, page=1)
    [merged] = [i.result() for i in group_and_merge([Item.of(a), Item.of(b)])]
    assert [s.location for s in merged.spans] == ["p. 1", "p. 1"]


class _Reads:
    def __init__(self, chunks: list[Chunk]) -> None:
        self.by_id = {c.id: c for c in chunks}

    async def chunks(self, ids: Sequence[str]) -> list[Chunk]:
        return [self.by_id[i] for i in ids if i in self.by_id]

    async def knowledge(self, ids: Sequence[str]) -> list[Any]:
        return []

    async def knowledge_bases(self, ids: Sequence[str]) -> list[Any]:
        return []


async def test_short_hit_expanded_with_neighbours_cites_the_neighbour_that_holds_the_sentence() -> None:
    texts = ["水泵由奥斯陆的团队设计，外壳为钢制，有两个进水口。" * 3, "水泵空载重四十一公斤。",
             "电机满载功率为二点二千瓦。每十八个月或运行四千小时后需要保养。" * 2]
    ids = ["n1", "n2", "n3"]
    chunks = [Chunk(id=i, tenant_id=1, knowledge_base_id="kb", knowledge_id=DOC, content=t, chunk_index=n,
                    pre_chunk_id=ids[n - 1] if n else None, next_chunk_id=ids[n + 1] if n < 2 else None,
                    metadata={"page": 4})
              for n, (i, t) in enumerate(zip(ids, texts, strict=True))]
    m = EventManager()
    m.register(ChunkMerge(PipelineDeps(chat_models=None, rerankers=None,  # type: ignore[arg-type]
                                       reads=_Reads(chunks))))
    ctx, _ = make_ctx()
    cm = ChatManage(PipelineRequest(tenant_id=1, session_id="s", request_id="r", query="q"), PipelineState(),
                    ctx)
    cm.state.rerank_result = [SearchResult(id="n2", content=texts[1], knowledge_id=DOC, chunk_index=1,
                                           score=0.9, knowledge_title="泵手册", knowledge_base_id="kb",
                                           chunk_metadata={"page": 4})]
    assert await m.trigger(cm, EventType.CHUNK_MERGE) is None
    [merged] = cm.state.merge_result
    assert merged.id == "n2"
    assert texts[0] in merged.content
    assert texts[2][:20] in merged.content
    _check(merged, dict(zip(ids, texts, strict=True)))
    assert [s.chunk_id for s in merged.spans] == ids
    assert {s.location for s in merged.spans} == {"p. 4"}

    refs = ReferenceRegistry()
    refs.register_search_results([merged])
    answer = refs.decode_output('每十八个月或运行四千小时后需要保养。<ref id="c1"/>')
    assert 'chunk_id="n3"' in answer
    assert 'page="p. 4"' in answer
