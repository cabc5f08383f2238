"""Over a real socket (uvicorn on 127.0.0.1): answers streamed and not, and a client that leaves stops the
answer — the model request is closed (the fake model server sees the hang-up) and the turn ends. Only a socket
carries a disconnect."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import openai
import pytest

from knora.api.openai.routes import SESSION_HEADER
from knora.root import Services
from tests.conftest import TEST_API_KEY
from tests.fakes import FakeModelServer, Reply
from tests.polling import eventually
from tests.services.streaming.live import live_client

pytestmark = pytest.mark.integration

USER = [{"role": "user", "content": "Tell me a long story"}]
# 50 s of answer if nobody stops it: longer than any poll's deadline, so only a stop ends the model request
SLOW = Reply(content="word " * 400, chunk_size=2, delay_per_chunk=0.05)


@asynccontextmanager
async def live_openai(c: Services) -> AsyncIterator[openai.AsyncOpenAI]:
    async with live_client(c) as http, openai.AsyncOpenAI(
            api_key=TEST_API_KEY, base_url=f"{str(http.base_url).rstrip('/')}/v1", max_retries=0) as oa:
        yield oa


async def test_answers_over_a_socket_streamed_and_not(model_container: Services,
                                                      fake: FakeModelServer) -> None:
    fake.script([Reply(content="Hello over TCP.", chunk_size=3), Reply(content="Hello again.", chunk_size=2)])
    async with live_openai(model_container) as oa:
        whole = await oa.chat.completions.create(model="knora:quick-answer", messages=USER)  # type: ignore
        stream = await oa.chat.completions.create(model="knora:quick-answer", messages=USER,  # type: ignore
                                                  stream=True, stream_options={"include_usage": True})
        chunks = [c async for c in stream]
    assert whole.choices[0].message.content == "Hello over TCP."
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "Hello again."
    assert chunks[-1].usage is not None
    assert chunks[-1].usage.prompt_tokens > 0


async def test_a_streaming_client_that_leaves_cancels_the_unsaved_turn(model_container: Services,
                                                                      fake: FakeModelServer) -> None:
    fake.script([SLOW])
    started = time.monotonic()
    async with live_openai(model_container) as oa:
        stream = await oa.chat.completions.create(model="knora:quick-answer", messages=USER,  # type: ignore
                                                  stream=True)
        seen = 0
        async for chunk in stream:
            seen += bool(chunk.choices and chunk.choices[0].delta.content)
            if seen == 3:
                break
        await stream.close()
        assert await eventually(lambda: fake.disconnected_since(started) is not None)
        assert await eventually(lambda: model_container.chat_service.unsaved.running == 0)


async def test_a_client_that_leaves_a_non_streamed_request_cancels_it(model_container: Services,
                                                                      fake: FakeModelServer) -> None:
    fake.script([SLOW])
    started = time.monotonic()
    async with live_openai(model_container) as oa:
        request = asyncio.ensure_future(oa.chat.completions.create(model="knora:quick-answer",
                                                                   messages=USER))  # type: ignore
        assert await eventually(lambda: len(fake.chat_requests) == 1)
        request.cancel()
        await asyncio.gather(request, return_exceptions=True)
        assert await eventually(lambda: fake.disconnected_since(started) is not None)
        assert await eventually(lambda: model_container.chat_service.unsaved.running == 0)


async def test_leaving_a_stored_turn_stops_it_and_keeps_the_partial_answer(model_container: Services,
                                                                          fake: FakeModelServer) -> None:
    def reply(body: dict[str, object]) -> Reply:
        return Reply(content="Stories") if "short title" in str(body["messages"]) else SLOW

    fake.handler = reply
    started = time.monotonic()
    async with live_openai(model_container) as oa:
        raw = await oa.chat.completions.with_raw_response.create(
            model="knora:quick-answer", messages=USER, stream=True,  # type: ignore
            extra_headers={SESSION_HEADER: "new"})
        sid = raw.headers[SESSION_HEADER]
        stream = raw.parse()
        seen = 0
        async for chunk in stream:
            seen += bool(chunk.choices and chunk.choices[0].delta.content)
            if seen == 3:
                break
        await stream.close()
        assert await eventually(lambda: fake.disconnected_since(started) is not None)
        await model_container.chat_service.wait_idle()
    bot = await model_container.session_service.get_message(model_container.default_tenant_id,
                                                       raw.headers["X-Knora-Message-Id"])
    assert bot is not None
    assert bot.is_completed
    assert bot.debug.get("stopped") == "user_requested"
    assert bot.content.startswith("word")
    assert len(bot.content) < len(SLOW.content)
    assert bot.session_id == sid
