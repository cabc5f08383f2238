"""Dependency aliases for routers: the container, the authenticated tenant, the request id."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from knora.container import Container
from knora.domain.errors import Unauthorized


# Dependencies are coroutines even when they do not await: FastAPI runs a plain ``def`` dependency in its thread
# pool, a thread hop per request for a dictionary lookup.
async def get_container(request: Request) -> Container:
    return request.app.state.container  # type: ignore[no-any-return]


ContainerDep = Annotated[Container, Depends(get_container)]


async def get_tenant_id(request: Request, container: ContainerDep) -> int:
    """X-API-Key first, then ``Authorization: Bearer`` (the web UI sends the key as a bearer token)."""
    key = request.headers.get("x-api-key", "").strip()
    bearer = request.headers.get("authorization", "")
    candidates = [key] if key else []
    if bearer.lower().startswith("bearer "):
        candidates.append(bearer[7:].strip())
    if not candidates:
        raise Unauthorized("Unauthorized: missing authentication")
    for candidate in candidates:
        tenant_id = await container.tenants.authenticate(candidate)
        if tenant_id is not None:
            request.state.tenant_id = tenant_id
            return tenant_id
    raise Unauthorized("Unauthorized: invalid API key")


TenantDep = Annotated[int, Depends(get_tenant_id)]


async def get_request_id(request: Request) -> str:
    return request.state.request_id  # type: ignore[no-any-return]


RequestIdDep = Annotated[str, Depends(get_request_id)]
