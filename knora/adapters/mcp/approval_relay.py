"""Redis pub/sub relay for tool-approval decisions (scale profile): the replica that receives
``POST /agent/tool-approvals/:id`` publishes; the replica whose run waits on that id resolves it."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable

import redis.asyncio as aioredis

from knora.ports.tool import ApprovalDecision

log = logging.getLogger(__name__)


class RedisApprovalRelay:
    def __init__(self, url: str, prefix: str) -> None:
        self._redis = aioredis.Redis.from_url(url)
        self.channel = f"{prefix}:agent:tool_approval"
        self._task: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()

    async def publish(self, tenant_id: int, pending_id: str, decision: ApprovalDecision) -> None:
        await self._redis.publish(self.channel, json.dumps(
            {"tenant_id": tenant_id, "pending_id": pending_id, "decision": decision.model_dump()}))

    async def start(self, on_decision: Callable[[int, str, ApprovalDecision], Awaitable[None]]) -> None:
        pubsub = self._redis.pubsub()
        await pubsub.subscribe(self.channel)

        async def listen() -> None:
            self._ready.set()
            try:
                while True:
                    msg = await pubsub.get_message(ignore_subscribe_messages=True, timeout=1.0)
                    if msg is None:
                        continue
                    try:
                        body = json.loads(msg["data"])
                        await on_decision(int(body["tenant_id"]), str(body["pending_id"]),
                                          ApprovalDecision.model_validate(body["decision"]))
                    except Exception:
                        log.warning("bad approval relay message", exc_info=True)
            finally:
                await pubsub.aclose()  # type: ignore[no-untyped-call,unused-ignore]  # typed from redis 8

        self._task = asyncio.create_task(listen(), name="approval-relay")
        await self._ready.wait()

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self._redis.aclose()
