"""Whole quick-answer turns against a model that hangs, stalls or is stopped: the turn ends with an error
frame then ``complete`` (or ``stop``), and the model request is closed at once.

The chat service runs the turn as it does for the API; the fake model server stands in for the provider and
records when the client hangs up. Bounds of 1 s against a 30 s stall or a 20 s answer.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from knora.domain.stream import StreamEvent
from knora.services.streaming.intake import ChatBody
from knora.settings import Settings
from tests.conftest import started
from tests.fakes.model_server import FakeModelServer, Reply
from tests.polling import eventually

pytestmark = [pytest.mark.integration, pytest.mark.timeout(20)]

STALL = 30.0


@pytest.fixture
async def fake() -> AsyncIterator[FakeModelServer]:
    async with FakeModelServer() as server:
        yield server


@pytest.fixture
async def services(make_settings: Callable[..., Settings], fake: FakeModelServer) -> AsyncIterator[Any]:
    settings = make_settings(chat_model="openai:fake-chat", chat_base_url=fake.base_url, chat_api_key="k",
                             model_first_token_seconds=1.0, model_stall_seconds=1.0)
    async with started(settings) as c:
        c.chat_service.stop_grace_seconds = 5.0
        yield c


async def run_turn(c: Any) -> tuple[str, str]:
    session = await c.session_service.create(c.default_tenant_id, title="t")
    turn = await c.chat_service.start(c.default_tenant_id, session.id, ChatBody(query="hello"),
                                      str(uuid.uuid4()))
    return session.id, turn.assistant_message_id


async def until_ended(c: Any, sid: str, mid: str, within: float = 10.0) -> list[StreamEvent]:
    async def ended() -> list[StreamEvent] | None:
        events: list[StreamEvent] = await c.stream_log.read(sid, mid)
        return events if any(e.type in ("complete", "stop") for e in events) else None

    events = await eventually(ended, timeout=within)
    assert events is not None, f"the turn did not end within {within} s"
    return events


async def closed_within(fake: FakeModelServer, after: float, seconds: float = 5.0) -> bool:
    return await eventually(lambda: fake.disconnected_since(after), timeout=seconds) is not None


async def test_a_hung_model_ends_the_turn_with_an_error_then_complete(services: Any,
                                                                     fake: FakeModelServer) -> None:
    fake.handler = lambda body: Reply(content="never", delay=STALL)
    began = time.monotonic()
    sid, mid = await run_turn(services)
    events = await until_ended(services, sid, mid)
    kinds = [e.type for e in events]
    assert kinds[-1] == "complete"
    error = next(e for e in events if e.type == "error")
    assert "model_first_token_seconds" in (error.content + str(error.data))
    assert time.monotonic() - began < STALL / 3
    assert await closed_within(fake, began)
    await services.chat_service.wait_idle()
    message = await services.session_service.get_message(services.default_tenant_id, mid)
    assert message.is_completed


async def test_a_stall_mid_answer_keeps_the_text_and_ends_with_an_error(services: Any,
                                                                       fake: FakeModelServer) -> None:
    fake.handler = lambda body: Reply(content="x" * 40, chunk_size=2, stall_after_chunks=4, stall=STALL)
    sid, mid = await run_turn(services)
    events = await until_ended(services, sid, mid)
    kinds = [e.type for e in events]
    assert kinds[-1] == "complete"
    assert "error" in kinds
    assert "".join(e.content for e in events if e.type == "answer").startswith("xx")


async def test_a_stopped_turn_closes_the_model_request_at_once(services: Any, fake: FakeModelServer) -> None:
    fake.handler = lambda body: Reply(content="y" * 200, chunk_size=1, delay_per_chunk=0.1)  # 20 s
    sid, mid = await run_turn(services)
    end = time.monotonic() + 10
    while not any(e.type == "answer" for e in await services.stream_log.read(sid, mid)):
        assert time.monotonic() < end, "no answer began"
        await asyncio.sleep(0.05)
    stopped = time.monotonic()
    assert await services.chat_service.stop(services.default_tenant_id, sid, mid) == "Generation stopped"
    events = await until_ended(services, sid, mid)
    assert events[-1].type == "stop"
    assert await closed_within(fake, stopped)  # the answer had ~19 s to go
