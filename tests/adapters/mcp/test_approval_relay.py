"""Approval decisions cross replicas through Redis pub/sub (scale profile)."""

from __future__ import annotations

import asyncio

import pytest

from knora.adapters.mcp.approval_relay import RedisApprovalRelay
from knora.domain.errors import NotFound
from knora.domain.stream import BusEvent
from knora.ports.tool import ApprovalDecision, ToolContext
from knora.services.agent.approval import ApprovalBroker
from tests.conftest import REDIS_URL

pytestmark = pytest.mark.integration


@pytest.mark.redis
async def test_decision_posted_to_another_replica_reaches_the_waiting_run(redis_prefix: str) -> None:
    waiting = ApprovalBroker(relay=RedisApprovalRelay(REDIS_URL, redis_prefix))
    other = ApprovalBroker(relay=RedisApprovalRelay(REDIS_URL, redis_prefix))
    await waiting.start()
    await other.start()
    requested: list[str] = []

    async def emit(kind: str, data: dict[str, object]) -> None:
        if kind == BusEvent.TOOL_APPROVAL_REQUIRED:
            requested.append(str(data["pending_id"]))

    try:
        run = asyncio.create_task(waiting.request(ToolContext(tenant_id=7, emit=emit),
                                                  {"timeout_seconds": 10}))
        while not requested:
            await asyncio.sleep(0.01)
        await other.resolve(7, requested[0], ApprovalDecision(approved=True, reason="from replica B"))
        decision = await asyncio.wait_for(run, 10)
        assert decision.approved
        assert decision.reason == "from replica B"
    finally:
        await waiting.close()
        await other.close()


async def test_without_a_relay_unknown_ids_are_not_found() -> None:
    with pytest.raises(NotFound):
        await ApprovalBroker().resolve(1, "nope", ApprovalDecision(approved=True))


async def test_stopping_the_turn_ends_the_wait() -> None:
    broker = ApprovalBroker()
    stop = asyncio.Event()

    async def emit(kind: str, data: dict[str, object]) -> None:
        if kind == BusEvent.TOOL_APPROVAL_REQUIRED:
            stop.set()  # the user presses stop instead of answering

    decision = await asyncio.wait_for(broker.request(ToolContext(tenant_id=1, emit=emit, cancelled=stop),
                                                     {"timeout_seconds": 60}), 5)
    assert not decision.approved
    assert not decision.timed_out
    assert "stopped" in decision.reason
    assert broker.pending(1) == []
