"""``GET /skills``: the skills an agent may use, which WeKnora's agent editor and @-picker list.

WeKnora lists the skills installed on one sandbox configuration (``sandbox_config_id``) or on a session's
(``session_id``). Knora has one skills folder for the whole install (``settings.skills_dir``, each skill a
folder with ``SKILL.md``; ``knora.adapters.tools._skills``) and no sandbox configurations, so the list is that
folder's skills whatever config id is given. With skills off (``settings.skills_enabled`` false, or no folder)
the answer is WeKnora's "skills off" one: an empty list and ``skills_available: false``, which makes the UI
hide its skill settings. A ``session_id`` must name a session of the caller's tenant (else 404, as WeKnora).
Knora ships no built-in skills: ``builtin_skills`` is WeKnora's summary with nothing known.
"""

from __future__ import annotations

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse

from knora.adapters.tools._skills import load_skills
from knora.api.deps import SessionServiceDep, SettingsDep, TenantDep
from knora.api.routes.sessions import session_id_or_404

router = APIRouter(tags=["agents"])


@router.get("/skills")
async def list_skills(settings: SettingsDep, sessions: SessionServiceDep, tenant_id: TenantDep,
                      sandbox_config_id: str = Query(default="", max_length=256),
                      session_id: str = Query(default="", max_length=256)) -> JSONResponse:
    del sandbox_config_id  # Knora has no sandbox configurations: one skills folder serves every agent
    if session_id:
        # NotFound (404) for a session of no one or of another tenant
        await sessions.get(tenant_id, session_id_or_404(session_id))
    available = settings.skills_enabled and settings.skills_dir is not None and settings.skills_dir.is_dir()
    skills = load_skills(settings.skills_dir) if available else {}
    data = [{"name": s.name, "description": s.description} for s in skills.values()]
    return JSONResponse({"success": True, "data": data, "skills_available": available,
                         "builtin_skills": {"known": False, "skills": [], "unavailable": 0}})
