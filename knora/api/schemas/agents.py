"""Agents: the create/update body and the tool-approval decision."""

from __future__ import annotations

from pydantic import BaseModel

from knora.api.schemas.wire import Bool, Obj, RequestBody, Str


class AgentRequest(RequestBody):
    name: Str = None
    description: Str = None
    avatar: Str = None
    config: Obj = None


class ToolApprovalDecisionRequest(RequestBody):
    approved: Bool = None
    reason: Str = None
    modified_args: Obj = None


class ToolApprovalResolved(BaseModel):
    pending_id: str
    approved: bool
