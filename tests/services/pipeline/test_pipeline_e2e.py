"""Whole turns through the real pipeline: real container, real ingestion and retrieval, fake model server."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest
from sqlalchemy import select

from knora.adapters.db.tables import KnowledgeRow
from knora.domain.stream import BusEvent
from tests.fakes import FakeModelServer, Reply
from tests.services.pipeline.conftest import DOCS, add_kb, make_ctx, turn

pytestmark = pytest.mark.integration


class TestQuickAnswerEndToEnd:
    async def test_rag_turn_streams_references_then_cited_answer(self, model_container: Any,
                                                                 fake: FakeModelServer) -> None:
        c = model_container
        kb = await add_kb(c, DOCS)
        fake.script([Reply(content=json.dumps({"rewrite_query": "solar panel peak watts",
                                               "intent": "kb_search"})),
                     Reply(content='About 400 W <ref id="c1"/>.', reasoning_content="look at c1",
                           chunk_size=5)])
        ctx, rec = make_ctx()
        outcome = await c.quick_answer.run(turn(c, "How much power does a solar panel produce?", [kb]), ctx)
        types = rec.types()
        assert types.index("references") < types.index("final_answer")
        refs = rec.of(BusEvent.REFERENCES)[0].data["references"]
        assert any("400 watts" in r["content"] for r in refs)
        assert outcome.answer == 'About 400 W <ref id="c1"/>.'
        assert rec.answer() == outcome.answer
        assert [e.data["done"] for e in rec.of(BusEvent.FINAL_ANSWER)][-1] is True
        assert rec.of(BusEvent.THOUGHT)[-1].data["done"] is True
        # the model saw handles, never chunk ids, and the rewrite drove retrieval
        prompt = "\n".join(m["content"] for m in fake.chat_requests[1]["messages"])
        assert '<chunk id="c1"' in prompt
        assert refs[0]["id"] not in prompt
        assert ctx.references.resolve("c1")["id"] == refs[0]["id"]  # type: ignore[index]
        calls = [e.data["tool_name"] for e in rec.of(BusEvent.TOOL_CALL)]
        results = {e.data["tool_name"]: e.data for e in rec.of(BusEvent.TOOL_RESULT)}
        assert calls == ["query_understand", "knowledge_search"]
        assert results["knowledge_search"]["data"]["count"] == len(refs)
        assert rec.of(BusEvent.TOOL_CALL)[1].data["arguments"]["query"] == "solar panel peak watts"
        stages = [e.data["stage"] for e in rec.of(BusEvent.STAGE_TIMING)]
        assert stages == ["load_history", "query_understand", "chunk_search_parallel", "chunk_rerank",
                          "chunk_merge", "filter_top_k", "into_chat_message", "chat_completion_stream"]
        assert set(stages) <= set(ctx.timings)

    async def test_extractive_answerer_without_model(self, plain_container: Any) -> None:
        c = plain_container
        kb = await add_kb(c, DOCS)
        ctx, rec = make_ctx()
        outcome = await c.quick_answer.run(turn(c, "How is oolong tea processed?", [kb]), ctx)
        assert "No generative model is configured" in outcome.answer
        assert "partially oxidised" in outcome.answer
        handle = outcome.answer.split('<ref id="')[1].split('"')[0]
        assert ctx.references.resolve(handle)["kind"] == "chunk"  # type: ignore[index]
        assert len(rec.of(BusEvent.FINAL_ANSWER)) > 3  # streamed in small deltas


class TestTurnReads:
    async def test_a_turn_reads_its_rows_once_and_the_next_turn_reads_again(
            self, plain_container: Any, monkeypatch: pytest.MonkeyPatch) -> None:
        c = plain_container
        kb = await add_kb(c, DOCS)
        store = c.search_service.store
        assert c.pipeline_deps.reads is store
        calls: Counter[str] = Counter()
        for name in ("knowledge_bases", "tenant_retrieval_config", "chunks", "knowledge",
                     "chunks_with_knowledge",
                     "knowledge_bases_with_tenant_config"):
            real = getattr(store, name)

            def wrapped(*a: Any, _real: Any = real, _name: str = name, **kw: Any) -> Any:
                calls[_name] += 1
                return _real(*a, **kw)

            monkeypatch.setattr(store, name, wrapped)
        outcome = await c.quick_answer.run(turn(c, "How is oolong tea processed?", [kb]), make_ctx()[0])
        assert "partially oxidised" in outcome.answer
        # KBs + tenant config once (request assembly; the search reuses them), hits + documents once
        # (hydration; the merge reuses them): two reads in all, instead of eight
        assert calls == Counter(knowledge_bases_with_tenant_config=1, chunks_with_knowledge=1)
        # nothing is kept between turns: an edit made between them is seen by the next turn
        async with c.sessions.begin() as s:
            rows = await s.scalars(select(KnowledgeRow).where(KnowledgeRow.knowledge_base_id == kb))
            for row in rows.all():
                row.title = f"{row.title} (edited)"
        ctx, rec = make_ctx()
        await c.quick_answer.run(turn(c, "How is oolong tea processed?", [kb]), ctx)
        assert calls == Counter(knowledge_bases_with_tenant_config=2, chunks_with_knowledge=2)
        refs = rec.of(BusEvent.REFERENCES)[0].data["references"]
        assert refs
        assert all(r["knowledge_title"].endswith("(edited)") for r in refs)
