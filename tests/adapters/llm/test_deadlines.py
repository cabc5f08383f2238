"""First-token and stall deadlines around a chat model, and the model request closed when a reader leaves.

Against the fake model server through the real clients. Every bound here is 1–2 s against a model that stalls
for 30 s (or an answer that would take 20 s), and each test asserts the end came long before the stall or the
answer would have ended, so no assertion depends on a timer firing within a few milliseconds.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import pytest

from knora.adapters.llm.deadlines import DeadlineChatModel, Deadlines
from knora.adapters.llm.ollama_chat import OllamaChatModel
from knora.adapters.llm.openai_chat import OpenAIChatModel
from knora.adapters.llm.registry import ChatModelRegistry
from knora.domain.model_wait import shared_first_token_window
from knora.ports.chat import (
    ChatChunk,
    ChatMessage,
    ChatModel,
    ChatOptions,
    ChatResponse,
    ModelDeadline,
    ModelError,
)
from knora.services.agent.think import stream_with_retry
from knora.settings import Settings
from tests.fakes import FakeModelServer, Reply
from tests.polling import eventually

pytestmark = [pytest.mark.integration, pytest.mark.timeout(20)]

USER = [ChatMessage(role="user", content="hello")]
STALL = 30.0  # how long the fake stays silent; every test ends long before
SLOW = Reply(content="y" * 200, chunk_size=1, delay_per_chunk=0.1)  # a 20 s answer


def openai_model(fake: FakeModelServer, **kw: Any) -> OpenAIChatModel:
    return OpenAIChatModel("fake-chat", base_url=fake.base_url, api_key="k", **{"max_retries": 0, **kw})


async def drain(model: ChatModel) -> str:
    return "".join([c.content async for c in model.stream(USER)])


async def drain_into(model: ChatModel, seen: list[str]) -> None:
    async for chunk in model.stream(USER):
        seen.append(chunk.content)


async def wait_for_disconnect(fake: FakeModelServer, after: float, within: float = 5.0) -> float:
    """Seconds from ``after`` until the server saw the client close a request (fails past ``within``)."""
    seconds = await eventually(lambda: fake.disconnected_since(after), timeout=within)
    assert seconds is not None, f"the model request was not closed within {within} s"
    return seconds


class TestFirstToken:
    async def test_a_hung_model_ends_with_a_clear_error_and_the_request_closed(self) -> None:
        async with FakeModelServer() as fake:
            fake.script([Reply(content="never", delay=STALL)])
            model = DeadlineChatModel(openai_model(fake), Deadlines(first_token=1.0, stall=0))
            began = time.monotonic()
            with pytest.raises(ModelDeadline, match="model_first_token_seconds") as err:
                await drain(model)
            waited = time.monotonic() - began
            await wait_for_disconnect(fake, began)
            await model.inner.close()  # type: ignore[attr-defined]
        assert waited < STALL / 3
        assert not err.value.transient

    async def test_the_clients_own_retries_stay_inside_the_deadline(self) -> None:
        """``Retry-After: 30`` twice kept a user 62 s; the first-token bound covers the SDK's retries."""
        async with FakeModelServer() as fake:
            fake.script([Reply(status=429, headers={"Retry-After": "30"})] * 3)
            model = DeadlineChatModel(openai_model(fake, max_retries=2), Deadlines(first_token=1.5, stall=0))
            began = time.monotonic()
            with pytest.raises(ModelDeadline):
                await drain(model)
            waited = time.monotonic() - began
            await model.inner.close()  # type: ignore[attr-defined]
        assert waited < 15
        assert len(fake.chat_requests) == 1  # the retry was still waiting out Retry-After

    async def test_a_non_streaming_call_is_bounded_too(self) -> None:
        async with FakeModelServer() as fake:
            fake.script([Reply(content="never", delay=STALL)])
            model = DeadlineChatModel(openai_model(fake), Deadlines(first_token=1.0, stall=0))
            began = time.monotonic()
            with pytest.raises(ModelDeadline):
                await model.chat(USER)
            await model.inner.close()  # type: ignore[attr-defined]
        assert time.monotonic() - began < STALL / 3

    async def test_zero_turns_the_bounds_off_and_a_prompt_model_is_untouched(self) -> None:
        async with FakeModelServer() as fake:
            fake.script([Reply(content="a quick answer", chunk_size=3, delay=1.2, delay_per_chunk=0.05),
                         Reply(content="whole", delay=1.2)])
            model = DeadlineChatModel(openai_model(fake), Deadlines(first_token=0, stall=0))
            assert await drain(model) == "a quick answer"
            assert (await model.chat(USER)).content == "whole"
            await model.inner.close()  # type: ignore[attr-defined]


class TestStall:
    @pytest.mark.parametrize("provider", ["openai", "ollama"])
    async def test_a_stall_mid_answer_ends_with_an_error_after_the_text_so_far(self, provider: str) -> None:
        async with FakeModelServer() as fake:
            fake.script([Reply(content="x" * 40, chunk_size=2, stall_after_chunks=4, stall=STALL)])
            inner: Any = (openai_model(fake) if provider == "openai"
                          else OllamaChatModel("q", base_url=fake.root_url))
            model = DeadlineChatModel(inner, Deadlines(first_token=5.0, stall=1.0))
            seen: list[str] = []
            began = time.monotonic()
            with pytest.raises(ModelDeadline, match="model_stall_seconds"):
                await drain_into(model, seen)
            waited = time.monotonic() - began
            await wait_for_disconnect(fake, began)
            await inner.close()
        assert "".join(seen).startswith("xx")
        assert waited < STALL / 3

    async def test_a_long_tool_call_keeps_the_stall_clock_reset(self) -> None:
        """Tool-call fragments are not yielded to callers, but they are progress: no stall error while they
        arrive, and callers still see only the assembled call at the end."""
        async with FakeModelServer() as fake:
            call = {"name": "kb", "arguments": {"q": "z" * 100}}
            fake.script([Reply(content="Let me look.", tool_calls=[call], chunk_size=2,
                               delay_per_chunk=0.05)])  # ~3 s of fragments against a 1 s stall bound
            model = DeadlineChatModel(openai_model(fake), Deadlines(first_token=5.0, stall=1.0))
            chunks = [c async for c in model.stream(USER)]
            await model.inner.close()  # type: ignore[attr-defined]
        assert "".join(c.content for c in chunks) == "Let me look."
        assert [c.tool_calls[0].name for c in chunks if c.tool_calls] == ["kb"]
        assert all(c.content or c.finish_reason or c.tool_calls or c.usage for c in chunks)


class _FlakyModel:
    """Fails transiently after ``after`` seconds without a token, every time (an in-process model: the test
    is about the retry loop, not the wire)."""

    model_id = "flaky"
    supports_tools = True

    def __init__(self, after: float) -> None:
        self.after = after
        self.calls = 0

    async def chat(self, messages: Sequence[ChatMessage], options: ChatOptions | None = None) -> ChatResponse:
        raise NotImplementedError

    async def stream(self, messages: Sequence[ChatMessage],
                     options: ChatOptions | None = None) -> AsyncIterator[ChatChunk]:
        self.calls += 1
        await asyncio.sleep(self.after)
        raise ModelError("model error 503: overloaded", transient=True, status=503)
        yield ChatChunk()  # pragma: no cover - makes this an async generator


class _Bus:
    async def emit(self, *args: Any, **kwargs: Any) -> None:
        return None


class TestRetries:
    async def test_the_agents_retries_share_one_first_token_deadline(self) -> None:
        """Each attempt fails transiently after 1.2 s; with the bound per attempt the agent would retry six
        times (7 s) and never hit it; sharing one 2 s bound, the second attempt ends with it."""
        flaky = _FlakyModel(after=1.2)
        model = DeadlineChatModel(flaky, Deadlines(first_token=2.0, stall=1.0))
        began = time.monotonic()
        with pytest.raises(ModelDeadline):
            await stream_with_retry(model, USER, ChatOptions(), _Bus(), 1,  # type: ignore[arg-type]
                                    retry_delays=(0.1,) * 5)
        assert flaky.calls == 2
        assert time.monotonic() - began < 6

    async def test_a_delta_moves_the_shared_window(self) -> None:
        async with FakeModelServer() as fake:
            fake.script([Reply(content="abc", chunk_size=1, delay=0.9), Reply(content="def", delay=0.9)])
            model = DeadlineChatModel(openai_model(fake), Deadlines(first_token=1.5, stall=1.0))
            with shared_first_token_window():
                first = await drain(model)
                second = await drain(model)  # 1.8 s after the window opened, 0.9 s after the last delta
            await model.inner.close()  # type: ignore[attr-defined]
        assert (first, second) == ("abc", "def")


class TestClosing:
    @pytest.mark.parametrize("provider", ["openai", "ollama"])
    async def test_aclose_closes_the_model_request_at_once(self, provider: str) -> None:
        async with FakeModelServer() as fake:
            fake.script([SLOW])
            model: Any = (openai_model(fake) if provider == "openai"
                          else OllamaChatModel("q", base_url=fake.root_url))
            stream = model.stream(USER)
            async for _ in stream:
                break
            left = time.monotonic()
            await stream.aclose()
            after = await wait_for_disconnect(fake, left)
            await model.close()
        assert after < 5  # the answer had ~20 s to go

    async def test_a_cancelled_reader_closes_the_request_through_the_wrapper(self) -> None:
        async with FakeModelServer() as fake:
            fake.script([SLOW])
            model = DeadlineChatModel(openai_model(fake), Deadlines())
            got = asyncio.Event()

            async def read() -> None:
                async for _ in model.stream(USER):
                    got.set()

            task = asyncio.create_task(read())
            await asyncio.wait_for(got.wait(), 10)
            cancelled = time.monotonic()
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            after = await wait_for_disconnect(fake, cancelled)
            await model.inner.close()  # type: ignore[attr-defined]
        assert after < 5


class TestSettings:
    async def test_the_registry_wraps_network_models_with_the_settings(
            self, make_settings: Callable[..., Settings], monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("KNORA_MODEL_FIRST_TOKEN_SECONDS", "7")
        monkeypatch.setenv("KNORA_MODEL_STALL_SECONDS", "0")
        settings = make_settings(chat_model="openai:m", chat_base_url="http://127.0.0.1:9/v1")
        assert (settings.model_first_token_seconds, settings.model_stall_seconds) == (7.0, 0.0)
        registry = ChatModelRegistry(settings)
        model = await registry.get(None)
        assert isinstance(model, DeadlineChatModel)
        assert model.model_id == "openai:m"
        assert not isinstance(registry.extractive, DeadlineChatModel)
        off = ChatModelRegistry(make_settings(chat_model="openai:m", model_first_token_seconds=0,
                                              model_stall_seconds=0))
        assert isinstance(await off.get(None), OpenAIChatModel)
        await registry.close()
        await off.close()
