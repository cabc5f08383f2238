"""The OpenAI-compatible API through the official ``openai`` client: models, chat completions streamed and
not, over the extractive answerer and over the fake model server (pipeline and agent), citations, history
from the client's messages, and the session header."""

from __future__ import annotations

import json
from typing import Any

import httpx
import openai
import pytest

from knora.api.openai.routes import MESSAGE_HEADER, SESSION_HEADER
from knora.root import Services
from knora.services.openai_api.conversation import SOURCES_RULE
from tests.conftest import TEST_API_KEY, client_for
from tests.fakes import FakeModelServer, Reply
from tests.services.pipeline.conftest import DOCS, add_kb

pytestmark = pytest.mark.integration

QUESTION = "How is oolong tea processed?"


def openai_client(c: Services, key: str = TEST_API_KEY) -> openai.AsyncOpenAI:
    from knora.api.app import create_app

    http = httpx.AsyncClient(transport=httpx.ASGITransport(app=create_app(services=c)),
                             base_url="http://knora.test", timeout=60)
    return openai.AsyncOpenAI(api_key=key, base_url="http://knora.test/v1", http_client=http, max_retries=0)


def rewrite(query: str) -> Reply:
    """The query-understanding call of a turn with history."""
    return Reply(content=json.dumps({"rewrite_query": query, "intent": "kb_search"}))


async def test_models_are_listed_and_retrieved(plain_container: Services) -> None:
    kb = await add_kb(plain_container, DOCS, name="teas")
    name = (await plain_container.kb_service.get(plain_container.default_tenant_id, kb)).name
    async with openai_client(plain_container) as oa:
        listed = await oa.models.list()
        ids = [m.id for m in listed.data]
        assert ids[0] == "knora:quick-answer"
        assert f"knora:kb/{name}" in ids
        assert "knora:agent/builtin-smart-reasoning" in ids
        assert all(m.object == "model" and m.owned_by == "knora" and m.created > 0 for m in listed.data)
        one = await oa.models.retrieve(f"knora:kb/{kb}")  # the id form is accepted too
        assert one.id == f"knora:kb/{kb}"
        assert one.model_extra
        assert one.model_extra["name"].endswith(name)
        with pytest.raises(openai.NotFoundError) as err:
            await oa.models.retrieve("knora:kb/none-such")
        assert err.value.code == "model_not_found"


async def test_extractive_answer_not_streamed_has_numbered_citations(plain_container: Services) -> None:
    kb = await add_kb(plain_container, DOCS)
    async with openai_client(plain_container) as oa:
        r = await oa.chat.completions.create(model=f"knora:kb/{kb}",
                                             messages=[{"role": "user", "content": QUESTION}])
    message = r.choices[0].message
    content = message.content or ""
    assert r.object == "chat.completion"
    assert r.model == f"knora:kb/{kb}"
    assert r.choices[0].finish_reason == "stop"
    assert "partially oxidised" in content
    assert "[1]" in content
    assert "<kb" not in content
    answer, sources = content.split(SOURCES_RULE)
    assert sources.strip() == "- [1] Tea culture"
    extra = message.model_extra or {}
    refs, cites = extra["knora_references"], extra["knora_citations"]
    assert cites[0]["number"] == 1
    assert cites[0]["title"] == "Tea culture"
    assert cites[0]["chunk_id"] in {ref["id"] for ref in refs}
    assert r.usage is not None
    assert r.usage.model_extra == {"estimated": True}
    assert r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens > 0


async def test_extractive_answer_streamed_is_the_same_answer(plain_container: Services) -> None:
    kb = await add_kb(plain_container, DOCS)
    async with openai_client(plain_container) as oa:
        whole = await oa.chat.completions.create(model=f"knora:kb/{kb}",
                                                 messages=[{"role": "user", "content": QUESTION}])
        stream = await oa.chat.completions.create(
            model=f"knora:kb/{kb}",
            messages=[{"role": "user", "content": [{"type": "text", "text": QUESTION}]}],
            stream=True, stream_options={"include_usage": True}, temperature=0.2, user="u-1", n=1)
        chunks = [c async for c in stream]
    assert chunks[0].choices[0].delta.role == "assistant"
    assert all(c.object == "chat.completion.chunk" and c.id == chunks[0].id for c in chunks)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == whole.choices[0].message.content
    last = [c for c in chunks if c.choices][-1]
    assert last.choices[0].finish_reason == "stop"
    assert (last.choices[0].delta.model_extra or {})["knora_citations"][0]["title"] == "Tea culture"
    assert chunks[-1].choices == []
    assert chunks[-1].usage is not None
    assert all(c.usage is None for c in chunks[:-1])


async def test_model_sees_the_clients_history_and_its_citations_are_numbered(
        model_container: Services, fake: FakeModelServer) -> None:
    kb = await add_kb(model_container, DOCS)
    fake.script([rewrite("solar panel peak watts"),
                 Reply(content='About 400 W <ref id="c1"/> at peak<ref id="c7"/>.', chunk_size=3,
                       reasoning_content="Looking at the passages.")])
    messages: list[Any] = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Tell me about solar panels"},
        {"role": "assistant", "content": f"They convert sunlight [1].{SOURCES_RULE}\n- [1] Solar power"},
        {"role": "user", "content": "How much power does one produce?"}]
    async with openai_client(model_container) as oa:
        stream = await oa.chat.completions.create(model=f"knora:kb/{kb}", messages=messages, stream=True,
                                                  stream_options={"include_usage": True})
        chunks = [c async for c in stream]
    deltas = [c.choices[0].delta for c in chunks if c.choices]
    text = "".join(d.content or "" for d in deltas)
    reasoning = "".join((d.model_extra or {}).get("reasoning_content") or "" for d in deltas)
    assert text.split(SOURCES_RULE)[0] == "About 400 W [1] at peak."
    assert text.split(SOURCES_RULE)[1].strip() == "- [1] Solar power"
    assert "Looking at the passages." in reasoning
    answer_call = fake.chat_requests[-1]["messages"]
    assert {"role": "user", "content": "Tell me about solar panels"} in answer_call
    assert {"role": "assistant", "content": "They convert sunlight [1]."} in answer_call  # no sources list
    assert "How much power does one produce?" in answer_call[-1]["content"]
    assert all("You are terse." not in str(m.get("content")) for m in answer_call)
    usage = chunks[-1].usage
    assert usage is not None
    assert usage.model_extra == {"estimated": False}
    assert usage.prompt_tokens > 0
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens


async def test_an_agent_model_runs_the_smart_reasoning_agent(model_container: Services,
                                                             fake: FakeModelServer) -> None:
    await add_kb(model_container, DOCS)
    fake.script([Reply(content="The agent answers directly.", chunk_size=4)])
    async with openai_client(model_container) as oa:
        r = await oa.chat.completions.create(model="knora:agent/builtin-smart-reasoning",
                                             messages=[{"role": "user", "content": "hello agent"}])
    assert r.choices[0].message.content == "The agent answers directly."
    assert fake.chat_requests[0].get("tools"), "the ReAct agent offers its tools; quick answer does not"
    assert r.usage is not None
    assert r.usage.model_extra == {"estimated": False}


async def test_a_named_session_stores_the_turn_and_supplies_the_history(model_container: Services,
                                                                        fake: FakeModelServer) -> None:
    kb = await add_kb(model_container, DOCS)
    answers = ["Panels make 400 W.", "Half a percent a year."]

    def reply(body: dict[str, Any]) -> Reply:
        prompt = json.dumps(body["messages"])
        if "short title" in prompt:
            return Reply(content="Solar panels")
        if "rewrite_query" in prompt:
            return rewrite("degradation")
        return Reply(content=answers.pop(0))

    fake.handler = reply
    async with openai_client(model_container) as oa:
        raw = await oa.chat.completions.with_raw_response.create(
            model=f"knora:kb/{kb}", messages=[{"role": "user", "content": "Solar panel power?"}],
            extra_headers={SESSION_HEADER: "new"})
        first = raw.parse()
        sid, mid = raw.headers[SESSION_HEADER], raw.headers[MESSAGE_HEADER]
        assert first.choices[0].message.content == "Panels make 400 W."
        await model_container.chat_service.wait_idle()
        stream = await oa.chat.completions.create(
            model=f"knora:kb/{kb}", messages=[{"role": "user", "content": "And degradation?"}], stream=True,
            stream_options={"include_usage": True}, extra_headers={SESSION_HEADER: sid})
        chunks = [c async for c in stream]
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "Half a percent a year."
    for usage in (first.usage, chunks[-1].usage):  # the model's counts, saved with the stored answer
        assert usage is not None
        assert usage.model_extra == {"estimated": False}
        assert usage.prompt_tokens > 0
    answer_call = [b["messages"] for b in fake.chat_requests
                   if not any(k in json.dumps(b["messages"]) for k in ("short title", "rewrite_query"))][-1]
    # the history is the session's, not the client's (which sent only the new question)
    assert {"role": "user", "content": "Solar panel power?"} in answer_call
    await model_container.chat_service.wait_idle()
    async with client_for(model_container) as http:
        stored = (await http.get(f"/api/v1/messages/{sid}/load")).json()["data"]
    assert [m["content"] for m in stored] == ["Solar panel power?", "Panels make 400 W.", "And degradation?",
                                              "Half a percent a year."]
    assert stored[1]["id"] == mid
    assert all(m["is_completed"] for m in stored)


async def test_a_session_of_another_tenant_or_none_is_not_found(plain_container: Services) -> None:
    other, key = await plain_container.tenants.create("other")
    async with client_for(plain_container, **{"X-API-Key": key}) as http:
        sid = (await http.post("/api/v1/sessions", json={})).json()["data"]["id"]
    async with openai_client(plain_container) as oa:
        for session in (sid, "not-a-uuid"):
            with pytest.raises(openai.NotFoundError) as err:
                await oa.chat.completions.create(model="knora:quick-answer",
                                                 messages=[{"role": "user", "content": "hi"}],
                                                 extra_headers={SESSION_HEADER: session})
            assert err.value.code == "session_not_found"


async def test_a_turn_that_fails_before_any_answer_is_an_openai_error(model_container: Services,
                                                                      fake: FakeModelServer) -> None:
    fake.script([Reply(status=400, error="the model refuses")] * 4)
    async with openai_client(model_container) as oa:
        with pytest.raises(openai.APIStatusError) as err:
            await oa.chat.completions.create(model="knora:quick-answer",
                                             messages=[{"role": "user", "content": "hi"}])
        assert err.value.status_code == 502
        assert err.value.code == "answer_failed"
        stream = await oa.chat.completions.create(model="knora:quick-answer", stream=True,
                                                  messages=[{"role": "user", "content": "hi"}])
        with pytest.raises(openai.APIError) as streamed:
            _ = [c async for c in stream]
        assert "the model refuses" in streamed.value.message


async def test_unsaved_turns_are_counted_in_the_metrics(model_container: Services,
                                                        fake: FakeModelServer) -> None:
    from tests.api.test_metrics import http_for, parse, value

    fake.script([Reply(content="Counted.")])
    async with openai_client(model_container) as oa:
        r = await oa.chat.completions.create(model="knora:quick-answer",
                                             messages=[{"role": "user", "content": "hi"}])
    assert r.choices[0].message.content == "Counted."
    async with http_for(model_container) as http:  # a scrape from this machine
        samples = parse((await http.get("/metrics")).text)
    assert value(samples, "knora_turns_total", runtime="quick", outcome="completed") == 1
