"""A turn's trace, end to end: services built with an OTLP endpoint export one trace per turn to a real
receiver, the pipeline's stages and the agent's tool calls as child spans with the times the runners
measured."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from knora.settings import Settings
from tests.api.test_metrics import agent_reply, ingest_and_ask_both_runtimes
from tests.conftest import client_for, started
from tests.fakes.model_server import FakeModelServer
from tests.fakes.otlp_collector import OtlpCollector, ReceivedSpan
from tests.services.streaming.sse import parse_sse

pytestmark = pytest.mark.integration


@pytest.fixture
def collector() -> Iterator[OtlpCollector]:
    with OtlpCollector() as c:
        yield c


def children(spans: list[ReceivedSpan], parent: ReceivedSpan) -> list[str]:
    return [s.name for s in spans if s.parent_span_id == parent.span_id]


async def test_turns_and_ingestion_are_traced(make_settings: Callable[..., Settings],
                                              collector: OtlpCollector) -> None:
    with FakeModelServer() as fake:
        fake.handler = agent_reply
        settings = make_settings(chat_model="openai:fake-chat", chat_base_url=fake.base_url, chat_api_key="x",
                                 otlp_endpoint=collector.endpoint)
        async with started(settings) as c, client_for(c) as http:
            _kb, sid = await ingest_and_ask_both_runtimes(c, http)
        # closing the services shut the tracer down, which exported every batched span

    spans = collector.received()
    turns = [s for s in spans if s.name == "knora.turn"]
    assert sorted(t.attributes["knora.runtime"] for t in turns) == ["quick", "smart"]
    assert all(t.parent_span_id == "" and t.attributes["knora.outcome"] == "completed" for t in turns)
    assert len({t.trace_id for t in turns}) == 2
    quick = next(t for t in turns if t.attributes["knora.runtime"] == "quick")
    stages = children(spans, quick)
    for name in ("stage query_understand", "stage chunk_search_parallel", "stage chat_completion_stream"):
        assert name in stages
    assert quick.attributes["knora.session_id"] == sid
    assert "knora.first_token_ms" in quick.attributes
    for s in spans:
        if s.parent_span_id == quick.span_id:
            assert quick.start_ns <= s.start_ns <= s.end_ns <= quick.end_ns, s.name
    smart = next(t for t in turns if t.attributes["knora.runtime"] == "smart")
    assert "tool knowledge_search" in children(spans, smart)

    ingest = [s for s in spans if s.name == "knora.ingest"]
    assert len(ingest) == 1
    assert ingest[0].attributes["knora.outcome"] == "completed"
    assert children(spans, ingest[0]) == ["load", "parse", "chunk", "embed", "index"]


async def test_tracing_off_exports_nothing(make_settings: Callable[..., Settings],
                                           collector: OtlpCollector) -> None:
    async with started(make_settings()) as c, client_for(c) as http:
        assert type(c.telemetry.tracer).__name__ == "NullTracer"
        sid = (await http.post("/api/v1/sessions", json={})).json()["data"]["id"]
        r = await http.post(f"/api/v1/knowledge-chat/{sid}", json={"query": "hello", "disable_title": True})
        assert "complete" in parse_sse(r.content).types
    assert collector.received() == []
