"""``POST /auth/logout`` and ``GET /auth/validate`` of WeKnora's web UI, over Knora's key-based auth.

Knora authenticates every request by its tenant API key (sent as ``X-API-Key``, or as the bearer token the
login route hands the UI): there are no server-side sessions. Logging out therefore revokes nothing — the
UI forgets its token, and the key stays valid until an operator rotates it; the route answers WeKnora's
success shape so the UI's logout completes. ``validate`` answers ``valid: true`` for a request that passed
authentication; one that did not is refused with 401 before it gets here, as every other route is."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from knora.api.deps import TenantDep

router = APIRouter(tags=["system"])


@router.post("/auth/logout")
async def logout(_tenant_id: TenantDep) -> JSONResponse:
    """Nothing to revoke: Knora keeps no login session (the API key is the credential)."""
    return JSONResponse({"success": True, "message": "Logout successful"})


@router.get("/auth/validate")
async def validate(_tenant_id: TenantDep) -> JSONResponse:
    return JSONResponse({"success": True, "valid": True, "message": "Token is valid"})
