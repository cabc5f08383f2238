"""Messages (api §1.5 "Messages"): time-paged history of a session, and deleting one message."""

from __future__ import annotations

from datetime import UTC, datetime

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from knora.api.deps import SessionServiceDep, TenantDep
from knora.api.envelope import ok
from knora.api.routes.sessions import session_id_or_404
from knora.api.schemas.conversations import MessageOut
from knora.api.schemas.envelope import Done, Envelope
from knora.domain.errors import BadRequest, NotFound
from knora.services.sessions.views import message_json

router = APIRouter(tags=["messages"])


def parse_time(value: str) -> datetime:
    """RFC 3339 / RFC 3339 Nano (Go clients send up to nine fractional digits; Python parses six)."""
    text = value.strip().replace("z", "Z")
    if "." in text:
        head, _, rest = text.partition(".")
        digits = len(rest) - len(rest.lstrip("0123456789"))
        text = f"{head}.{rest[:min(digits, 6)]}{rest[digits:]}" if digits else text
    try:
        dt = datetime.fromisoformat(text)
    except ValueError as exc:
        raise BadRequest("Invalid time format, please use RFC3339 or RFC3339Nano format") from exc
    if "T" not in text.upper() or dt.tzinfo is None:
        raise BadRequest("Invalid time format, please use RFC3339 or RFC3339Nano format")
    return dt.astimezone(UTC)


@router.get("/messages/{session_id}/load", response_model=Envelope[list[MessageOut]])
async def load_messages(session_id: str, session_service: SessionServiceDep, tenant_id: TenantDep,
                        limit: str = "20",
                        before_time: str | None = None, resource_urls: str = "handle") -> JSONResponse:
    if resource_urls not in ("handle", "public"):
        raise BadRequest("resource_urls must be handle or public")
    try:
        n = int(limit)
    except ValueError:
        n = 20
    n = 20 if n <= 0 else min(n, 1000)
    before = parse_time(before_time) if before_time else None
    messages = await session_service.load_messages(tenant_id, session_id_or_404(session_id), limit=n,
                                                     before=before)
    return ok([message_json(m) for m in messages])


@router.delete("/messages/{session_id}/{message_id}", response_model=Done)
async def delete_message(session_id: str, message_id: str, session_service: SessionServiceDep,
                         tenant_id: TenantDep) -> JSONResponse:
    session_id_or_404(session_id)
    if not message_id:
        raise NotFound("Message not found")
    await session_service.delete_message(tenant_id, session_id, message_id)
    return ok(message="Message deleted successfully")
