"""Human approval of dangerous tool calls (spec §6.7): the run emits ``tool_approval_required`` and waits.

Fail-closed: a timeout is a rejection. Pending approvals live in the process running the turn; with a relay
(Redis pub/sub in the scale profile) a decision posted to any replica reaches it.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass
from typing import Any

from knora.domain.errors import NotFound
from knora.domain.stream import BusEvent
from knora.ports.tool import ApprovalDecision, ApprovalRelay, ToolContext


@dataclass
class _Pending:
    tenant_id: int
    future: asyncio.Future[ApprovalDecision]
    payload: dict[str, Any]


class ApprovalBroker:
    def __init__(self, default_timeout: float = 600.0, relay: ApprovalRelay | None = None) -> None:
        self.default_timeout = default_timeout
        self.relay = relay
        self._pending: dict[str, _Pending] = {}

    async def start(self) -> None:
        if self.relay is not None:
            await self.relay.start(self._on_relayed)

    async def close(self) -> None:
        if self.relay is not None:
            await self.relay.close()

    async def _on_relayed(self, tenant_id: int, pending_id: str, decision: ApprovalDecision) -> None:
        self._resolve_local(tenant_id, pending_id, decision)

    def pending(self, tenant_id: int) -> list[dict[str, Any]]:
        return [p.payload for p in self._pending.values() if p.tenant_id == tenant_id]

    async def request(self, ctx: ToolContext, payload: dict[str, Any]) -> ApprovalDecision:
        pending_id = str(uuid.uuid4())
        timeout = float(payload.get("timeout_seconds") or self.default_timeout)
        full = {**payload, "pending_id": pending_id, "tenant_id": ctx.session_tenant_id,
                "session_id": ctx.session_id,
                "assistant_message_id": ctx.assistant_message_id, "request_id": ctx.request_id,
                "tool_call_id": ctx.tool_call_id, "timeout_seconds": timeout, "requested_at": time.time()}
        future: asyncio.Future[ApprovalDecision] = asyncio.get_running_loop().create_future()
        self._pending[pending_id] = _Pending(ctx.session_tenant_id, future, full)
        await ctx.emit(BusEvent.TOOL_APPROVAL_REQUIRED, full)
        try:
            decision = await self._wait(future, timeout, ctx.cancelled)
        finally:
            self._pending.pop(pending_id, None)
        await ctx.emit(BusEvent.TOOL_APPROVAL_RESOLVED, {
            **full, "approved": decision.approved, "reason": decision.reason,
            "timed_out": decision.timed_out})
        return decision

    @staticmethod
    async def _wait(future: asyncio.Future[ApprovalDecision], timeout: float,
                    cancelled: asyncio.Event | None) -> ApprovalDecision:
        """The decision, a timeout (rejection), or the user stopping the turn (rejection) — whichever is
        first."""
        waiters: list[asyncio.Future[object]] = [asyncio.ensure_future(asyncio.shield(future))]
        if isinstance(cancelled, asyncio.Event):
            waiters.append(asyncio.ensure_future(cancelled.wait()))
        done, pending = await asyncio.wait(waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        for w in pending:
            w.cancel()
        if future.done():
            return future.result()
        if done:
            return ApprovalDecision(approved=False, reason="the turn was stopped")
        return ApprovalDecision(approved=False, reason="approval timeout", timed_out=True)

    def _resolve_local(self, tenant_id: int, pending_id: str, decision: ApprovalDecision) -> bool:
        p = self._pending.get(pending_id)
        if p is None or p.tenant_id != tenant_id or p.future.done():
            return False
        p.future.set_result(decision)
        return True

    async def resolve(self, tenant_id: int, pending_id: str, decision: ApprovalDecision) -> None:
        """Local pending ids resolve at once; others go to the relay (another replica may hold them)."""
        if self._resolve_local(tenant_id, pending_id, decision):
            return
        if self.relay is None:
            raise NotFound("approval request not found or already resolved")
        await self.relay.publish(tenant_id, pending_id, decision)
