"""The agent against a model that hangs, stalls or is stopped mid-answer: the run ends with a clear error, and
the model request is closed at once (the fake server records the client hanging up).

Bounds of 1–2 s against a 30 s stall or a 20 s answer; assertions allow seconds of slack.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from knora.adapters.llm.deadlines import DeadlineChatModel, Deadlines
from knora.domain.stream import BusEvent
from tests.fakes.model_server import FakeModelServer, Reply
from tests.polling import eventually
from tests.services.agent.helpers import echo_tool, harness, openai_model

pytestmark = [pytest.mark.integration, pytest.mark.timeout(20)]

SLOW = Reply(content="y" * 200, chunk_size=1, delay_per_chunk=0.1)  # a 20 s answer


async def closed_within(fake: FakeModelServer, after: float, seconds: float = 5.0) -> bool:
    return await eventually(lambda: fake.disconnected_since(after), timeout=seconds) is not None


async def test_a_hung_model_fails_the_run_with_the_deadline_not_after_retries(fake: FakeModelServer) -> None:
    fake.script([Reply(content="never", delay=30.0)] * 3)
    h = harness(DeadlineChatModel(openai_model(fake), Deadlines(first_token=1.0, stall=1.0)), [echo_tool()],
                retry_delays=[0.1, 0.1])
    began = time.monotonic()
    res = await h.run()
    assert time.monotonic() - began < 10
    assert "model_first_token_seconds" in res.error
    assert "model_first_token_seconds" in h.rec.of(BusEvent.ERROR)[0].data["error"]
    assert len(fake.chat_requests) == 1  # a deadline is not retried
    assert await closed_within(fake, began)


async def test_a_stop_mid_answer_closes_the_model_request(fake: FakeModelServer) -> None:
    fake.script([SLOW])
    h = harness(DeadlineChatModel(openai_model(fake), Deadlines()), [echo_tool()])

    async def stop_after_a_few(_e: Any) -> None:
        if len(h.rec.of(BusEvent.FINAL_ANSWER)) >= 3:
            h.cancelled.set()

    h.bus.subscribe(BusEvent.FINAL_ANSWER, stop_after_a_few)
    began = time.monotonic()
    res = await h.run()
    stopped = time.monotonic()
    assert res.stop_reason == "cancelled"
    assert stopped - began < 10
    assert await closed_within(fake, began)


async def test_a_cancelled_run_closes_the_model_request(fake: FakeModelServer) -> None:
    """What a stop does to a running turn: the runner task is cancelled while it waits on the model."""
    fake.script([SLOW])
    h = harness(DeadlineChatModel(openai_model(fake), Deadlines()), [echo_tool()])
    first = asyncio.Event()

    async def on_answer(_e: Any) -> None:
        first.set()

    h.bus.subscribe(BusEvent.FINAL_ANSWER, on_answer)
    task = asyncio.create_task(h.run())
    await asyncio.wait_for(first.wait(), 10)
    cancelled = time.monotonic()
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert await closed_within(fake, cancelled)
