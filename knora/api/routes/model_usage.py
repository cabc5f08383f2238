"""``GET /models/usage?start=&end=`` (WeKnora's model cost page): token usage per model over a window (the
last 7 days by default), from what Knora stores of each answer (``knora.services.sessions.model_usage``,
which says what is and is not counted). ``start``/``end`` are RFC 3339 or Unix seconds, as WeKnora takes
them.

Registered before ``knora.api.routes.models``, whose ``/models/{model_id}`` would take ``usage`` as a model
id.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse

from knora.api.deps import ModelServiceDep, SessionServiceDep, TenantDep
from knora.domain.common import utcnow
from knora.domain.errors import ValidationFailed
from knora.services.sessions.model_usage import usage_json

router = APIRouter(tags=["models"])

DEFAULT_WINDOW = timedelta(days=7)


def parse_time(raw: str, name: str) -> datetime:
    """RFC 3339 or Unix seconds (WeKnora's ``parseTimeQuery``), as an aware UTC time."""
    text = raw.strip()
    try:
        if text.lstrip("-").isdigit():
            return datetime.fromtimestamp(int(text), UTC)
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except (ValueError, OverflowError, OSError) as exc:
        raise ValidationFailed(f"{name} must be RFC 3339 or Unix seconds") from exc
    if parsed.tzinfo is None:
        raise ValidationFailed(f"{name} must carry a time zone (RFC 3339)")
    return parsed.astimezone(UTC)


@router.get("/models/usage")
async def models_usage(sessions: SessionServiceDep, models: ModelServiceDep, tenant_id: TenantDep,
                       start: str = Query(default="", max_length=64),
                       end: str = Query(default="", max_length=64)) -> JSONResponse:
    until = parse_time(end, "end") if end else utcnow()
    since = parse_time(start, "start") if start else until - DEFAULT_WINDOW
    if since > until:
        raise ValidationFailed("start must not be after end")
    rows = await sessions.messages.answer_usage(tenant_id, since, until)
    return JSONResponse({"success": True, "data": usage_json(rows, await models.list(tenant_id))})
