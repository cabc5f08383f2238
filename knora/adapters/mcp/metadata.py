"""The last directory read from each MCP service (WeKnora's ``mcp_metadata`` snapshot): the server's name,
version, description and instructions and its tools, as Knora's MCP client saw them on the last refresh.

WeKnora keeps the snapshot in its database; Knora keeps it in this process (no table), so after a restart a
service reads as never synchronised (``null``) until it is refreshed again. ``stale`` is WeKnora's: the
service's connection settings (transport, URL, headers, credentials, stdio command, environment) changed since
the snapshot was taken.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from knora.adapters.mcp.client import ServerDescription
from knora.adapters.mcp.tool import tool_name
from knora.domain.common import utcnow
from knora.domain.mcp import MCPService


def describe_tools(service: MCPService, remote: list[Any]) -> list[dict[str, object]]:
    """The API's view of a service's tools (the SDK's ``Tool`` objects)."""
    approvals = service.tool_approvals or {}
    return [{"name": t.name, "registered_name": tool_name(service.name, t.name),
             "description": t.description or "", "input_schema": t.input_schema or {},
             "requires_approval": bool(approvals.get(t.name))} for t in remote]


def fingerprint(service: MCPService) -> str:
    """A digest of what decides which server a service reaches (display text and ``enabled`` excluded)."""
    raw = json.dumps([service.transport_type, service.url, service.headers, service.auth_config,
                      service.stdio_config, service.env_vars], sort_keys=True, default=str)
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Snapshot:
    service_id: str
    fingerprint: str
    description: ServerDescription
    synced_at: datetime

    def json(self, service: MCPService) -> dict[str, object]:
        d = self.description
        return {"service_id": self.service_id, "tools": describe_tools(service, d.tools),
                "instructions": d.instructions, "server_name": d.name, "server_version": d.version,
                "server_description": d.description, "synced_at": self.synced_at.isoformat(),
                "stale": self.fingerprint != fingerprint(service)}


@dataclass
class MetadataSnapshots:
    """Snapshots by (tenant, service id)."""

    _by_service: dict[tuple[int, str], Snapshot] = field(default_factory=dict)

    def get(self, service: MCPService) -> Snapshot | None:
        return self._by_service.get((service.tenant_id, service.id))

    def put(self, service: MCPService, description: ServerDescription) -> Snapshot:
        snap = Snapshot(service.id, fingerprint(service), description, utcnow())
        self._by_service[(service.tenant_id, service.id)] = snap
        return snap
