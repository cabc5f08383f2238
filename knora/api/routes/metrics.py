"""``GET /metrics``: this process's metrics in Prometheus's text format (each replica is scraped on its own).

Closed by default: a scrape from this machine (a loopback client naming a loopback host, so a reverse proxy on
the same host does not open it to the world) needs nothing; any other needs ``Authorization: Bearer
<metrics_token>``, and without a configured token it is refused. The figures are the process's, not a
tenant's, so a tenant's API key does not open them. 404 when ``metrics_enabled`` is off.
"""

from __future__ import annotations

import hmac

from fastapi import APIRouter, Request
from fastapi.responses import Response

from knora.adapters.telemetry.prometheus import CONTENT_TYPE
from knora.api.deps import ServicesDep
from knora.api.same_origin import host_name, is_loopback
from knora.domain.errors import Forbidden, NotFound, Unauthorized

router = APIRouter(tags=["metrics"])


def _local(request: Request) -> bool:
    client = request.client.host if request.client is not None else ""
    return is_loopback(client) and is_loopback(host_name(request.headers.get("host", "")))


@router.get("/metrics", include_in_schema=False)
async def metrics(request: Request, services: ServicesDep) -> Response:
    s = services.settings
    if not s.metrics_enabled:
        raise NotFound("Metrics are disabled (metrics_enabled)")
    if not _local(request):
        if not s.metrics_token:
            raise Forbidden("Metrics are served to this machine only; set metrics_token to scrape from "
                            "another host")
        scheme, _, given = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(),
                                                                 s.metrics_token.encode()):
            raise Unauthorized("A valid metrics token is required")
    m = services.telemetry.metrics
    await m.refresh()
    return Response(m.render(), media_type=CONTENT_TYPE)
