"""The audit log: who did what and when, for admin actions (members, keys, models, agents, MCP services, web
search, settings, sharing) and every deletion. Written by the API layer once a request succeeded (which
routes are audited: ``knora.api.policy``); read by admins through ``GET /tenants/{id}/audit-log``."""

from __future__ import annotations

import logging

from knora.domain.access import AuditEntry
from knora.ports.audit_store import AuditRepo

log = logging.getLogger(__name__)


class AuditService:
    def __init__(self, repo: AuditRepo) -> None:
        self._repo = repo

    async def record(self, entry: AuditEntry) -> None:
        """Appends an entry; a failure is logged, never turned into the request's failure (the action is
        done by then)."""
        try:
            await self._repo.add(entry)
        except Exception:
            log.exception("could not write the audit entry %s %s by %s", entry.action, entry.target,
                          entry.actor)

    async def entries(self, tenant_id: int, *, before_id: int | None = None, limit: int = 50,
                      action: str | None = None) -> list[AuditEntry]:
        return await self._repo.entries(tenant_id, before_id=before_id, limit=min(max(limit, 1), 200),
                                        action=action)
