"""The model a turn names is the model that answers (issue 13 item 6), over HTTP, with two stored chat models:
one served by the fake OpenAI-compatible server, one whose URL refuses connections. ``builtin-chat`` is the
settings' model (here: none, so the local extractive answerer); ``is_default`` decides for turns that name
no model; a broken model fails only the turns that use it, with an ``error`` frame."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest

from knora.adapters.llm.extractive import EXTRACTIVE_MODEL_ID
from knora.settings import Settings
from tests.conftest import client_for, started
from tests.fakes.model_server import FakeModelServer, Reply
from tests.services.streaming.sse import Stream, parse_sse

pytestmark = pytest.mark.integration


def dead_url() -> str:
    """A loopback URL nothing listens on (a port bound and released): connections are refused at once."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


@pytest.fixture
async def http(make_settings: Callable[..., Settings]) -> AsyncIterator[httpx.AsyncClient]:
    async with started(make_settings()) as c, client_for(c) as client:
        yield client


async def add_model(http: httpx.AsyncClient, name: str, base_url: str, **extra: Any) -> str:
    r = await http.post("/api/v1/models", json={
        "name": name, "type": "KnowledgeQA", "source": "remote",
        "parameters": {"base_url": base_url, "api_key": "k", "provider": "openai", "max_retries": 0},
        **extra})
    assert r.status_code == 201, r.text
    return str(r.json()["data"]["id"])


async def chat(http: httpx.AsyncClient, path: str = "knowledge-chat",
               **body: Any) -> tuple[Stream, dict[str, Any]]:
    sid = (await http.post("/api/v1/sessions", json={"title": "t"})).json()["data"]["id"]
    r = await http.post(f"/api/v1/{path}/{sid}", json={"query": "Say hello", **body})
    assert r.status_code == 200, r.text
    stream = parse_sse(r.content)
    bot = (await http.get(f"/api/v1/messages/{sid}/load")).json()["data"][-1]
    return stream, bot


async def defaults(http: httpx.AsyncClient) -> set[str]:
    return {m["id"] for m in (await http.get("/api/v1/models")).json()["data"]
            if m["type"] == "KnowledgeQA" and m["is_default"]}


@pytest.fixture
async def two_models(http: httpx.AsyncClient, fake: FakeModelServer) -> tuple[str, str]:
    """(good, dead); the dead one is stored first: the first stored row used to answer every unnamed turn."""
    fake.handler = lambda body: Reply(content="Hello from the good model.")
    dead = await add_model(http, "dead-chat", dead_url())
    good = await add_model(http, "good-chat", fake.base_url)
    return good, dead


class TestNamedModel:
    async def test_the_named_model_answers(self, http: httpx.AsyncClient, fake: FakeModelServer,
                                           two_models: tuple[str, str]) -> None:
        good, _ = two_models
        s, bot = await chat(http, summary_model_id=good)
        assert s.answer() == "Hello from the good model."
        assert "error" not in s.types
        assert bot["model_id"] == good
        assert len(fake.chat_requests) == 1

    async def test_a_dead_model_fails_only_its_turn_with_an_error_frame(
            self, http: httpx.AsyncClient, fake: FakeModelServer, two_models: tuple[str, str]) -> None:
        good, dead = two_models
        s, bot = await chat(http, summary_model_id=dead)
        errors = s.of("error")
        assert len(errors) == 1
        assert errors[0]["done"] is True
        assert errors[0]["data"]["stage"] == "knowledge_qa_execution"
        assert dead in errors[0]["content"]  # the frame says which model failed
        assert not s.answer()
        assert bot["is_completed"]
        s, _ = await chat(http, summary_model_id=good)  # the next turn, on another model, is unharmed
        assert s.answer() == "Hello from the good model."
        s, _ = await chat(http)  # and so is a turn that names no model
        assert "error" not in s.types

    async def test_builtin_chat_is_the_settings_model_whatever_is_stored(
            self, http: httpx.AsyncClient, fake: FakeModelServer, two_models: tuple[str, str]) -> None:
        for path, body in (("knowledge-chat", {"summary_model_id": "builtin-chat"}),
                           ("agent-chat", {"agent_id": "builtin-quick-answer"}),
                           ("agent-chat", {"agent_id": "builtin-smart-reasoning", "agent_enabled": True})):
            s, bot = await chat(http, path, **body)
            assert "error" not in s.types, (path, body, s.of("error"))
            assert bot["model_id"] == EXTRACTIVE_MODEL_ID, (path, body)
        assert fake.chat_requests == []  # no stored model was asked

    async def test_a_smart_reasoning_turn_on_a_dead_model_ends_with_an_error_frame(
            self, http: httpx.AsyncClient, two_models: tuple[str, str]) -> None:
        _, dead = two_models
        r = await http.post("/api/v1/agents", json={"name": "dead agent", "config": {
            "agent_mode": "smart-reasoning", "model_id": dead, "allowed_tools": ["thinking"]}})
        assert r.status_code == 201, r.text
        s, _ = await chat(http, "agent-chat", agent_id=r.json()["data"]["id"], agent_enabled=True)
        errors = s.of("error")
        assert errors
        assert errors[-1]["done"] is True
        assert dead in errors[-1]["content"]


class TestDefault:
    async def test_stored_models_are_not_defaults_until_marked(
            self, http: httpx.AsyncClient, fake: FakeModelServer, two_models: tuple[str, str]) -> None:
        assert await defaults(http) == {"builtin-chat"}
        s, bot = await chat(http)
        assert bot["model_id"] == EXTRACTIVE_MODEL_ID
        assert fake.chat_requests == []

    async def test_is_default_decides_unnamed_turns_one_per_type(
            self, http: httpx.AsyncClient, fake: FakeModelServer, two_models: tuple[str, str]) -> None:
        good, dead = two_models
        r = await http.put(f"/api/v1/models/{dead}/default")
        assert r.status_code == 200, r.text
        assert await defaults(http) == {dead}
        s, _ = await chat(http)  # unnamed → the tenant's default, which is broken: this turn fails …
        assert s.of("error")
        s, bot = await chat(http, summary_model_id="builtin-chat")  # … the built-in still answers
        assert bot["model_id"] == EXTRACTIVE_MODEL_ID
        smart = (await http.get("/api/v1/agents/builtin-smart-reasoning")).json()["data"]
        assert smart["config"]["model_id"] == dead  # an agent naming no model shows (and uses) the default

        r = await http.put(f"/api/v1/models/{good}", json={"is_default": True})  # clears the other
        assert r.status_code == 200, r.text
        assert await defaults(http) == {good}
        s, bot = await chat(http)
        assert s.answer() == "Hello from the good model."
        assert bot["model_id"] == good

        r = await http.put("/api/v1/models/builtin-chat/default")  # the built-in is the default again
        assert r.status_code == 200, r.text
        assert await defaults(http) == {"builtin-chat"}
        _, bot = await chat(http)
        assert bot["model_id"] == EXTRACTIVE_MODEL_ID

    async def test_a_model_created_as_default_clears_the_previous_default(
            self, http: httpx.AsyncClient, fake: FakeModelServer) -> None:
        first = await add_model(http, "first", fake.base_url, is_default=True)
        second = await add_model(http, "second", fake.base_url, is_default=True)
        assert await defaults(http) == {second}
        assert first != second

    async def test_set_default_of_an_unknown_model_is_404(self, http: httpx.AsyncClient) -> None:
        r = await http.put("/api/v1/models/00000000-0000-0000-0000-000000000000/default")
        assert r.status_code == 404
        assert r.json()["success"] is False


class TestBuiltinRerank:
    """``builtin-rerank`` (item 7): listed as a Rerank model, accepted where a Rerank model is, used where
    named, and never applied to a turn that names no rerank model."""

    async def test_listed_and_accepted_only_as_a_rerank_model(self, http: httpx.AsyncClient) -> None:
        models = {m["id"]: m for m in (await http.get("/api/v1/models")).json()["data"]}
        assert models["builtin-rerank"]["type"] == "Rerank"
        assert models["builtin-rerank"]["is_default"] is False
        assert (await http.get("/api/v1/models/builtin-rerank")).json()["data"]["type"] == "Rerank"
        ok = await http.post("/api/v1/agents", json={"name": "r",
                                                      "config": {"rerank_model_id": "builtin-rerank"}})
        assert ok.status_code == 201, ok.text
        bad = await http.post("/api/v1/agents", json={"name": "c", "config": {"model_id": "builtin-rerank"}})
        assert bad.status_code == 400
        assert (await http.delete("/api/v1/models/builtin-rerank")).status_code == 400

    async def test_quick_answer_reranks_with_it_only_when_named(self, make_settings: Callable[..., Settings]
                                                                ) -> None:
        from tests.services.pipeline.conftest import DOCS, add_kb

        async with started(make_settings()) as c, client_for(c) as client:
            kb = await add_kb(c, DOCS)
            named = await client.post("/api/v1/agents", json={"name": "reranked", "config": {
                "agent_mode": "quick-answer", "rerank_model_id": "builtin-rerank"}})
            plain = await client.post("/api/v1/agents", json={"name": "plain", "config": {
                "agent_mode": "quick-answer", "rerank_model_id": ""}})
            for agent, expected in ((named, "builtin-rerank"), (plain, None)):
                s, bot = await chat(client, "agent-chat", agent_id=agent.json()["data"]["id"],
                                    query="How is oolong tea processed?", knowledge_base_ids=[kb])
                assert "error" not in s.types
                stage = bot["debug"]["pipeline"]["stages"].get("chunk_rerank", {})
                assert stage.get("model") == expected, stage
