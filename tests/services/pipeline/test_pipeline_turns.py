"""Turn-level behaviour through the real pipeline: fallbacks, cancellation, intents, pure chat, failures,
entity search, web search — real container, real retrieval, fake model server."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from knora import prompts
from knora.domain.models import AgentConfig
from knora.domain.stream import BusEvent, Event
from knora.ports.graph import GraphNode
from knora.ports.turn import HistoryTurn
from knora.ports.websearch import WebResult
from knora.services.pipeline.runner import PipelineFailed
from tests.adapters.sandbox.test_duckdb_sandbox import UNSAFE_SQL
from tests.fakes import FakeModelServer, Reply
from tests.services.pipeline.conftest import DOCS, add_kb, chunks_of, make_ctx, turn

pytestmark = pytest.mark.integration
NOTHING = "xyzzy quux plugh"  # matches nothing in DOCS


def rewrite(q: str, intent: str = "kb_search") -> Reply:
    return Reply(content=json.dumps({"rewrite_query": q, "intent": intent, "image_description": ""}))


def agent(**config: Any) -> AgentConfig:
    return AgentConfig(name="t", config=config)


class TestFallbacks:
    async def test_model_fallback_lists_documents_and_is_marked(self, model_container: Any,
                                                                fake: FakeModelServer) -> None:
        c = model_container
        kb = await add_kb(c, DOCS)
        fake.script([rewrite(NOTHING), Reply(content="The knowledge base has nothing on this.")])
        ctx, rec = make_ctx()
        outcome = await c.quick_answer.run(turn(c, NOTHING, [kb]), ctx)
        assert outcome.is_fallback
        assert outcome.answer == "The knowledge base has nothing on this."
        assert not rec.of(BusEvent.REFERENCES)
        answers = rec.of(BusEvent.FINAL_ANSWER)
        assert all(e.data["is_fallback"] for e in answers)
        assert answers[-1].data["done"]
        assert answers[0].data["event_id"].endswith("-fallback")
        system = fake.chat_requests[-1]["messages"][0]["content"]
        assert "- Solar power" in system
        assert "- Tea culture" in system
        result = next(e for e in rec.of(BusEvent.TOOL_RESULT) if e.data["tool_name"] == "knowledge_search")
        assert result.data["success"]
        assert result.data["output"] == "未检索到相关内容"

    async def test_fixed_fallback(self, model_container: Any, fake: FakeModelServer) -> None:
        c = model_container
        kb = await add_kb(c, DOCS)
        fake.script([rewrite(NOTHING)])
        ctx, rec = make_ctx()
        req = turn(c, NOTHING, [kb], agent=agent(fallback_strategy="fixed", fallback_response="Nope."))
        outcome = await c.quick_answer.run(req, ctx)
        assert (outcome.answer, outcome.is_fallback) == ("Nope.", True)
        assert next(e.data for e in rec.of(BusEvent.FINAL_ANSWER))["done"] is True
        assert len(fake.chat_requests) == 1  # only the rewrite call

    async def test_cancellation_is_checked_before_nothing_found(self, model_container: Any,
                                                                fake: FakeModelServer) -> None:
        c = model_container
        kb = await add_kb(c, DOCS)
        fake.script([rewrite(NOTHING)])
        ctx, rec = make_ctx()

        async def stop_on_search(ev: Event) -> None:
            if ev.data.get("tool_name") == "knowledge_search":
                ctx.cancelled.set()

        ctx.bus.subscribe(BusEvent.TOOL_CALL, stop_on_search)
        outcome = await c.quick_answer.run(turn(c, NOTHING, [kb]), ctx)
        assert not outcome.is_fallback
        assert outcome.answer == ""
        assert not rec.of(BusEvent.FINAL_ANSWER)
        assert len(rec.of(BusEvent.TOOL_CALL)) == len(rec.of(BusEvent.TOOL_RESULT))  # windows closed


class TestIntentsAndChat:
    async def test_chitchat_skips_retrieval_and_uses_the_intent_prompt(self, model_container: Any,
                                                                      fake: FakeModelServer) -> None:
        c = model_container
        kb = await add_kb(c, DOCS)
        fake.script([rewrite("hi", "chitchat"), Reply(content="Hello!")])
        ctx, rec = make_ctx()
        outcome = await c.quick_answer.run(turn(c, "hey there, how are you?", [kb]), ctx)
        assert outcome.answer == "Hello!"
        assert not rec.of(BusEvent.REFERENCES)
        assert [e.data["tool_name"] for e in rec.of(BusEvent.TOOL_CALL)] == ["query_understand"]
        system = fake.chat_requests[-1]["messages"][0]["content"]
        assert system.startswith("The user is chatting casually.")

    async def test_unknown_intent_still_retrieves(self, model_container: Any, fake: FakeModelServer) -> None:
        c = model_container
        kb = await add_kb(c, DOCS)
        fake.script([rewrite("solar panel watts", "knowledge_lookup"), Reply(content="ok")])
        ctx, rec = make_ctx()
        await c.quick_answer.run(turn(c, "solar panel watts", [kb]), ctx)
        assert rec.of(BusEvent.REFERENCES)

    async def test_plain_text_rewrite_is_used(self, model_container: Any, fake: FakeModelServer) -> None:
        c = model_container
        kb = await add_kb(c, DOCS)
        fake.script([Reply(content="How is oolong tea oxidised"), Reply(content="ok")])
        ctx, rec = make_ctx()
        await c.quick_answer.run(turn(c, "and that one?", [kb]), ctx)
        assert rec.of(BusEvent.TOOL_CALL)[1].data["arguments"]["query"] == "How is oolong tea oxidised"
        assert any("Oolong" in r["content"] for r in rec.of(BusEvent.REFERENCES)[0].data["references"])

    async def test_pure_chat_with_history_compacts_citations(self, model_container: Any,
                                                             fake: FakeModelServer) -> None:
        c = model_container
        fake.script([Reply(content="Sure.")])
        history = [HistoryTurn(query="old q", answer='<think>x</think>Before <kb doc="D" chunk_id="ch-1" />'),
                   HistoryTurn(query="unanswered", answer="")]
        ctx, rec = make_ctx()
        outcome = await c.quick_answer.run(turn(c, "tell me a joke", history=history), ctx)
        assert outcome.answer == "Sure."
        msgs = fake.chat_requests[0]["messages"]
        assert [m["role"] for m in msgs] == ["system", "user", "assistant", "user"]
        assert msgs[0]["content"].startswith(prompts.content("pure_chat").split("{")[0].strip()[:30])
        assert msgs[2]["content"] == 'Before <ref id="c1"/>'
        assert [e.data["stage"] for e in rec.of(BusEvent.STAGE_TIMING)] == ["load_history",
                                                                            "chat_completion_stream"]


class TestFailures:
    async def test_model_error_fails_the_stage(self, model_container: Any, fake: FakeModelServer) -> None:
        c = model_container
        kb = await add_kb(c, DOCS)
        fake.script([rewrite("solar panel watts"), Reply(status=400, error="bad request")])
        ctx, rec = make_ctx()
        with pytest.raises(PipelineFailed) as err:
            await c.quick_answer.run(turn(c, "solar panel watts", [kb]), ctx)
        assert err.value.error.error_type == "model_call_failed"
        assert len(rec.of(BusEvent.TOOL_CALL)) == len(rec.of(BusEvent.TOOL_RESULT))

    async def test_stream_broken_mid_way_emits_error_and_keeps_partial(self, model_container: Any,
                                                                      fake: FakeModelServer) -> None:
        c = model_container
        kb = await add_kb(c, DOCS)
        fake.script([rewrite("solar panel watts"), Reply(content="partial answer text", chunk_size=2,
                                                          abort_after_chunks=4)])
        ctx, rec = make_ctx()
        outcome = await c.quick_answer.run(turn(c, "solar panel watts", [kb]), ctx)
        assert rec.of(BusEvent.ERROR)[0].data["stage"] == "chat_completion_stream"
        assert outcome.answer == "partial answer text"[: len(outcome.answer)]
        assert outcome.answer
        assert not any(e.data["done"] for e in rec.of(BusEvent.FINAL_ANSWER))

    async def test_stop_during_the_answer_sends_no_done(self, model_container: Any,
                                                        fake: FakeModelServer) -> None:
        c = model_container
        kb = await add_kb(c, DOCS)
        fake.script([rewrite("solar panel watts"), Reply(content="x" * 40, chunk_size=2,
                                                         delay_per_chunk=0.01)])
        ctx, rec = make_ctx()

        async def stop_after_two(ev: Event) -> None:
            if len(rec.of(BusEvent.FINAL_ANSWER)) >= 2:
                ctx.cancelled.set()

        ctx.bus.subscribe(BusEvent.FINAL_ANSWER, stop_after_two)
        outcome = await c.quick_answer.run(turn(c, "solar panel watts", [kb]), ctx)
        assert 0 < len(outcome.answer) < 40
        assert not any(e.data["done"] for e in rec.of(BusEvent.FINAL_ANSWER))


class _Web:
    name = "fake-web"

    def __init__(self) -> None:
        self.queries: list[str] = []

    async def search(self, query: str, max_results: int = 5) -> list[WebResult]:
        self.queries.append(query)
        return [WebResult(title="Solar news", url="https://news.example/solar", snippet="Panels got cheaper.",
                          published_at="2026-01-01")]


class TestSearchSources:
    async def test_entity_search_brings_graph_chunks(self, model_container: Any,
                                                     fake: FakeModelServer) -> None:
        c = model_container
        kb = await add_kb(c, DOCS, extract_config={"enabled": True})
        wall = (await chunks_of(c, kb))["长城"][0]
        await c.graph_store.add(c.default_tenant_id, kb, [GraphNode(name="长城", chunk_ids=[wall.id])], [])
        fake.script([rewrite("the famous wall"),
                     Reply(content='```json\n[{"entity": "长城"}]\n```'),
                     Reply(content="answer")])
        ctx, rec = make_ctx()
        await c.quick_answer.run(turn(c, "the famous wall", [kb]), ctx)
        refs = rec.of(BusEvent.REFERENCES)[0].data["references"]
        assert any(r["id"] == wall.id and r["match_type"] == 6 for r in refs)

    async def test_web_search_results_are_web_handles(self, model_container: Any,
                                                      fake: FakeModelServer) -> None:
        c = model_container
        web = _Web()
        c.quick_answer.deps.web_search = web
        fake.script([rewrite("solar prices"), Reply(content='Cheaper <ref id="w1"/>')])
        ctx, rec = make_ctx()
        outcome = await c.quick_answer.run(turn(c, "solar prices", web_search_enabled=True), ctx)
        assert web.queries == ["solar prices"]
        assert ctx.references.resolve("w1") == {"kind": "web", "url": "https://news.example/solar",
                                                "title": "Solar news"}
        assert outcome.references[0].chunk_type == "web_search"
        call = next(e for e in rec.of(BusEvent.TOOL_CALL) if e.data["tool_name"] == "knowledge_search")
        assert call.data["arguments"]["search_source"] == "web"
        prompt = fake.chat_requests[-1]["messages"][0]["content"]
        assert '<page id="w1" title="Solar news">' in prompt
        assert "<published>2026-01-01</published>" in prompt

    async def test_concurrent_turns_do_not_share_state(self, model_container: Any,
                                                       fake: FakeModelServer) -> None:
        c = model_container
        kb = await add_kb(c, DOCS)
        fake.handler = lambda body: Reply(content="done")
        no_rewrite = agent(enable_rewrite=False)
        runs = [c.quick_answer.run(turn(c, q, [kb], agent=no_rewrite), make_ctx()[0])
                for q in ("solar panel electricity", "oolong tea oxidised")]
        a, b = await asyncio.gather(*runs)
        assert a.answer == b.answer == "done"
        assert "Solar" in a.references[0].content
        assert "Oolong" in b.references[0].content


class TestDataAnalysis:
    async def test_model_written_sql_runs_read_only_over_the_csv(self, model_container: Any,
                                                                 fake: FakeModelServer) -> None:
        import re

        c = model_container
        kb = await c.kb_service.create(c.default_tenant_id, {"name": "sales"})
        csv_text = "region,revenue\nnorth,100\nsouth,250\nnorth,50\n"
        await c.ingest_service.add_file(c.default_tenant_id, kb.id, "sales.csv", csv_text.encode())
        await c.jobs.wait_idle(timeout=60)

        def handle(body: dict[str, Any]) -> Reply:
            last = body["messages"][-1]["content"]
            if "Table Schema:" in last:
                kid = re.search(r"Knowledge ID: (\S+)", last).group(1)  # type: ignore[union-attr]
                sql = f"SELECT region, SUM(revenue) AS total FROM {kid} GROUP BY region ORDER BY total DESC"
                return Reply(content=json.dumps({"knowledge_id": kid, "sql": sql}))
            if body.get("max_tokens") == 150:
                return rewrite("revenue by region north south")
            return Reply(content="south leads")

        fake.handler = handle
        ctx, _ = make_ctx()
        outcome = await c.quick_answer.run(turn(c, "revenue by region north south", [kb.id],
                                                agent=agent(data_analysis_enabled=True)), ctx)
        assert outcome.answer == "south leads"
        analysis = [r for r in outcome.references if r.id.startswith("analysis_")]
        assert analysis
        assert 'record 1: {"region": "south", "total": 250}' in analysis[0].content
        assert analysis[0].match_type == 9
        system = fake.chat_requests[-1]["messages"][0]["content"]
        assert "=== DuckDB Query Results ===" in system

    async def test_every_unsafe_path_is_refused(self, model_container: Any, fake: FakeModelServer) -> None:
        """The shared sandbox's list, written by the model with the document's own table name."""
        import re

        c = model_container
        kb = await c.kb_service.create(c.default_tenant_id, {"name": "sales"})
        await c.ingest_service.add_file(c.default_tenant_id, kb.id, "sales.csv", b"region,n\nnorth,1\n")
        await c.jobs.wait_idle(timeout=60)
        current = {"sql": ""}

        def handle(body: dict[str, Any]) -> Reply:
            last = body["messages"][-1]["content"]
            if "Table Schema:" in last:
                kid = re.search(r"Knowledge ID: (\S+)", last).group(1)  # type: ignore[union-attr]
                sql = current["sql"].replace("sales", kid)
                return Reply(content=json.dumps({"knowledge_id": kid, "sql": sql}))
            return rewrite("region n") if body.get("max_tokens") == 150 else Reply(content="fine")

        fake.handler = handle
        with_analysis = agent(data_analysis_enabled=True)
        for sql, _ in UNSAFE_SQL:
            current["sql"] = sql
            ctx, _ = make_ctx()
            outcome = await c.quick_answer.run(turn(c, "region n", [kb.id], agent=with_analysis), ctx)
            assert outcome.answer == "fine", sql
            assert not any(r.id.startswith("analysis_") for r in outcome.references), sql
        current["sql"] = "SELECT region, sum(n) AS total FROM sales GROUP BY region"
        ctx, _ = make_ctx()
        outcome = await c.quick_answer.run(turn(c, "region n", [kb.id], agent=with_analysis), ctx)
        assert any(r.id.startswith("analysis_") for r in outcome.references)  # safe SQL does run here

    async def test_unsafe_sql_is_ignored(self, model_container: Any, fake: FakeModelServer) -> None:
        c = model_container
        kb = await c.kb_service.create(c.default_tenant_id, {"name": "sales"})
        await c.ingest_service.add_file(c.default_tenant_id, kb.id, "s.csv", b"a,b\n1,2\n")
        await c.jobs.wait_idle(timeout=60)

        def handle(body: dict[str, Any]) -> Reply:
            if "Table Schema:" in body["messages"][-1]["content"]:
                return Reply(content=json.dumps({"knowledge_id": "x",
                                                 "sql": "SELECT * FROM read_csv_auto('/etc/passwd')"}))
            return rewrite("a b") if body.get("max_tokens") == 150 else Reply(content="fine")

        fake.handler = handle
        ctx, _ = make_ctx()
        outcome = await c.quick_answer.run(turn(c, "a b", [kb.id], agent=agent(data_analysis_enabled=True)),
                                           ctx)
        assert outcome.answer == "fine"
        assert not any(r.id.startswith("analysis_") for r in outcome.references)
