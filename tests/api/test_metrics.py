"""GET /metrics end to end: an ingestion, a quick-answer turn and an agent turn with a tool call, read back
through a Prometheus text-format parser; who may scrape."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from knora.root import Services
from knora.settings import Settings
from tests.api.test_agents_chat import kb_with_document, tool_messages
from tests.conftest import TEST_API_KEY, started
from tests.fakes.model_server import FakeModelServer, Reply
from tests.services.streaming.sse import parse_sse

pytestmark = pytest.mark.integration

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def parse(text: str) -> Samples:
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def http_for(c: Services, base_url: str = "http://127.0.0.1:8080", client: tuple[str, int] = ("127.0.0.1", 5),
             **headers: str) -> httpx.AsyncClient:
    from knora.api.app import create_app

    transport = httpx.ASGITransport(app=create_app(services=c), client=client)
    return httpx.AsyncClient(transport=transport, base_url=base_url,
                             headers={"X-API-Key": TEST_API_KEY, **headers}, timeout=60)



@pytest.fixture
async def services(make_settings: Callable[..., Settings], fake: FakeModelServer) -> AsyncIterator[Services]:
    async with started(make_settings(chat_model="openai:fake-chat", chat_base_url=fake.base_url,
                                     chat_api_key="x", metrics_token="scrape-me")) as c:
        yield c


def agent_reply(body: dict[str, Any]) -> Reply:
    if not body.get("tools"):
        return Reply(content="Leave")  # the session title, or the quick answer
    results = tool_messages(body)
    if not results:
        return Reply(tool_calls=[{"name": "knowledge_search",
                                  "arguments": json.dumps({"queries": ["annual leave days"]})}])
    handle = re.search(r'<chunk id="(c\d+)"', results[-1])
    return Reply(content=f'Annual leave is 20 days <ref id="{handle.group(1) if handle else "c1"}"/>.')


async def ingest_and_ask_both_runtimes(c: Services, http: httpx.AsyncClient) -> tuple[str, str]:
    """One document ingested, then one quick-answer turn and one agent turn with a tool call (the fake model
    answers with ``agent_reply``); returns (knowledge base id, session id)."""
    kb = await kb_with_document(http)
    sid = (await http.post("/api/v1/sessions", json={})).json()["data"]["id"]
    r = await http.post(f"/api/v1/knowledge-chat/{sid}", json={"query": "How many days of annual leave?",
                                                                "knowledge_base_ids": [kb]})
    assert "complete" in parse_sse(r.content).types
    r = await http.post(f"/api/v1/agent-chat/{sid}", json={
        "query": "How many days of annual leave?", "agent_enabled": True,
        "agent_id": "builtin-smart-reasoning", "knowledge_base_ids": [kb]})
    assert "tool_result" in parse_sse(r.content).types
    await c.chat_service.wait_idle()
    return kb, sid


async def test_a_scrape_after_ingestion_and_both_runtimes(services: Services, fake: FakeModelServer) -> None:
    fake.handler = agent_reply
    async with http_for(services) as http:
        kb, sid = await ingest_and_ask_both_runtimes(services, http)
        scrape = await http.get("/metrics", headers={"X-API-Key": ""})
    assert scrape.status_code == 200, scrape.text
    assert scrape.headers["content-type"].startswith("text/plain; version=0.0.4")
    s = parse(scrape.text)

    assert value(s, "knora_ingest_jobs_total", outcome="completed") == 1
    assert value(s, "knora_ingest_chunks_total") >= 1
    assert value(s, "knora_turns_total", runtime="quick", outcome="completed") == 1
    assert value(s, "knora_turns_total", runtime="smart", outcome="completed") == 1
    assert value(s, "knora_turn_first_token_seconds_count", runtime="quick") == 1
    for stage in ("query_understand", "chunk_search_parallel", "chat_completion_stream"):
        assert value(s, "knora_stage_duration_seconds_count", runtime="quick", stage=stage) == 1, stage
    assert value(s, "knora_tool_call_duration_seconds_count", runtime="smart", tool="knowledge_search",
                 outcome="ok") == 1
    assert value(s, "knora_model_call_duration_seconds_count", model="openai:fake-chat", kind="stream",
                 outcome="ok") >= 2
    assert value(s, "knora_model_tokens_total", model="openai:fake-chat", kind="completion") > 0
    assert value(s, "knora_http_requests_total", method="POST", route="/api/v1/knowledge-chat/{session_id}",
                 status="200") == 1
    assert value(s, "knora_active_turns") == 0
    assert value(s, "knora_http_requests_in_flight") == 1  # the scrape itself
    assert ("knora_job_queue_depth", frozenset()) in s
    # ids never become labels
    assert sid not in scrape.text
    assert kb not in scrape.text


async def test_a_failed_turn_counts_an_error(services: Services, fake: FakeModelServer) -> None:
    fake.script([Reply(status=400, error="bad request")] * 4)
    async with http_for(services) as http:
        sid = (await http.post("/api/v1/sessions", json={})).json()["data"]["id"]
        r = await http.post(f"/api/v1/knowledge-chat/{sid}", json={"query": "hello", "disable_title": True})
        assert "error" in parse_sse(r.content).types
        await services.chat_service.wait_idle()
        s = parse((await http.get("/metrics")).text)
    assert value(s, "knora_model_call_duration_seconds_count", model="openai:fake-chat", kind="stream",
                 outcome="error") >= 1
    assert sum(v for (name, labels), v in s.items()
               if name == "knora_errors_total" and dict(labels)["kind"].startswith("turn")) >= 1


class TestWhoMayScrape:
    async def test_another_host_needs_the_metrics_token(self, services: Services) -> None:
        async with http_for(services, base_url="http://knora.example", client=("10.1.2.3", 4)) as http:
            assert (await http.get("/metrics")).status_code == 401  # a tenant's API key does not open it
            assert (await http.get("/metrics", headers={"Authorization": "Bearer wrong"})).status_code == 401
            ok = await http.get("/metrics", headers={"Authorization": "Bearer scrape-me"})
            assert ok.status_code == 200
            assert "knora_http_requests_total" in ok.text

    async def test_a_proxy_on_this_machine_does_not_open_it(self, services: Services) -> None:
        # a loopback client naming a public Host: a reverse proxy on this machine
        async with http_for(services, base_url="http://knora.example") as http:
            assert (await http.get("/metrics")).status_code == 401

    async def test_without_a_token_only_this_machine(self, make_settings: Callable[..., Settings]) -> None:
        async with started(make_settings()) as c:
            async with http_for(c, base_url="http://knora.example", client=("10.1.2.3", 4)) as http:
                r = await http.get("/metrics", headers={"Authorization": "Bearer anything"})
                assert r.status_code == 403
                assert r.json()["success"] is False
            async with http_for(c) as http:
                assert (await http.get("/metrics")).status_code == 200

    async def test_disabled(self, make_settings: Callable[..., Settings]) -> None:
        async with started(make_settings(metrics_enabled=False)) as c, http_for(c) as http:
            assert (await http.get("/metrics")).status_code == 404
            assert (await http.get("/api/v1/knowledge-bases")).status_code == 200


async def test_a_failed_ingestion_is_counted_by_kind(services: Services) -> None:
    async with http_for(services) as http:
        kb = (await http.post("/api/v1/knowledge-bases", json={"name": "Docs"})).json()["data"]["id"]
        r = await http.post(f"/api/v1/knowledge-bases/{kb}/knowledge/file",
                            files={"file": ("broken.pdf", b"%PDF-1.4 this is not a pdf", "application/pdf")})
        assert r.status_code == 200, r.text
        kid = r.json()["data"]["id"]
        await services.jobs.wait_idle(30)
        assert (await http.get(f"/api/v1/knowledge/{kid}")).json()["data"]["parse_status"] == "failed"
        s = parse((await http.get("/metrics")).text)
    assert value(s, "knora_ingest_jobs_total", outcome="failed") == 1
    assert value(s, "knora_ingest_duration_seconds_count", outcome="failed") == 1
    assert value(s, "knora_errors_total", kind="ingest:parse") == 1
