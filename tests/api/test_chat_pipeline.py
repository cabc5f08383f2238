"""Chat over HTTP with the real quick-answer pipeline: real ingestion and retrieval, extractive answerer or
the fake OpenAI-compatible model server."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from tests.conftest import client_for
from tests.fakes import FakeModelServer, Reply
from tests.services.pipeline.conftest import DOCS, add_kb
from tests.services.streaming.runners import ScriptedRunner
from tests.services.streaming.sse import parse_sse

pytestmark = pytest.mark.integration


async def session(http: httpx.AsyncClient, **body: Any) -> str:
    return str((await http.post("/api/v1/sessions", json=body)).json()["data"]["id"])


async def test_extractive_answer_is_cited_and_titled_from_the_query(plain_container: Any) -> None:
    kb = await add_kb(plain_container, DOCS)
    async with client_for(plain_container) as http:
        sid = await session(http)
        r = await http.post(f"/api/v1/knowledge-chat/{sid}",
                            json={"query": "How is oolong tea processed?", "knowledge_base_ids": [kb]})
        s = parse_sse(r.content)
        assert s.types[0] == "agent_query"
        assert s.types.index("references") < s.types.index("answer")
        assert s.types[-2:] == ["complete", "session_title"]
        answer = s.answer()
        assert "partially oxidised" in answer
        assert '<kb doc="Tea culture" chunk_id="' in answer
        assert "<ref" not in answer
        cited = answer.split('chunk_id="')[1].split('"')[0]
        assert cited in {r["id"] for r in s.of("references")[0]["knowledge_references"]}
        assert s.of("session_title")[0]["content"] == "How is oolong tea processed?"
        bot = (await http.get(f"/api/v1/messages/{sid}/load")).json()["data"][-1]
        assert bot["content"] == answer
        assert bot["is_completed"]
        assert bot["model_id"]
        assert bot["debug"]["stages"]
        assert bot["knowledge_references"]


async def test_model_answer_streams_expanded_citations(model_container: Any, fake: FakeModelServer) -> None:
    kb = await add_kb(model_container, DOCS)
    fake.script([Reply(content=json.dumps({"rewrite_query": "solar panel peak watts",
                                           "intent": "kb_search"})),
                 Reply(content='About 400 W <ref id="c1"/> at peak<ref id="c7"/>.', chunk_size=3)])
    async with client_for(model_container) as http:
        sid = await session(http, title="set")
        r = await http.post(f"/api/v1/knowledge-chat/{sid}",
                            json={"query": "How much power does a solar panel produce?",
                                  "knowledge_base_ids": [kb]})
        s = parse_sse(r.content)
        answer = s.answer()
        assert answer.startswith('About 400 W <kb doc="Solar power" chunk_id="')
        assert answer.endswith(" at peak.")
        assert len(s.of("answer")) > 5  # streamed in small deltas, never a half tag
        assert all("<ref" not in f["content"] and not f["content"].endswith("<") for f in s.of("answer"))


async def test_title_comes_from_the_model_when_one_is_configured(model_container: Any,
                                                                 fake: FakeModelServer) -> None:
    model_container.runners.quick = ScriptedRunner()  # so the title is the only model call
    fake.script([Reply(content="Streaming in Knora")])
    async with client_for(model_container) as http:
        sid = await session(http)
        s = parse_sse((await http.post(f"/api/v1/knowledge-chat/{sid}", json={"query": "how?"})).content)
        assert s.of("session_title")[0]["content"] == "Streaming in Knora"
        assert (await http.get(f"/api/v1/sessions/{sid}")).json()["data"]["title"] == "Streaming in Knora"


async def test_agent_chat_runs_the_smart_reasoning_agent(model_container: Any, fake: FakeModelServer) -> None:
    kb = await add_kb(model_container, DOCS)
    fake.script([Reply(content="The agent answers directly.", chunk_size=4)])
    async with client_for(model_container) as http:
        sid = await session(http, title="set")
        r = await http.post(f"/api/v1/agent-chat/{sid}", json={"query": "hello agent",
                                                               "knowledge_base_ids": [kb],
                                                               "agent_id": "builtin-smart-reasoning"})
        s = parse_sse(r.content)
        assert s.types[0] == "agent_query"
        assert s.types[-1] == "complete"
        assert s.answer() == "The agent answers directly."
        bot = (await http.get(f"/api/v1/messages/{sid}/load")).json()["data"][-1]
        assert bot["content"] == "The agent answers directly."
        assert bot["is_completed"]
        assert bot["agent_id"] == "builtin-smart-reasoning"
        assert fake.chat_requests[0].get("tools"), "the ReAct agent offers its tools; quick answer does not"
