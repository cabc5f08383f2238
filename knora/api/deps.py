"""Dependency aliases for routers: one per service, the authenticated tenant, the request id.

A route names the services it uses (``kbs: KBServiceDep``); each alias reads one typed field of the running
``Services`` (``knora/root.py``), so a reader — and the type checker — can follow a call from the route down.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Annotated

from fastapi import Depends, Request

from knora.adapters.mcp.toolset import MCPToolset
from knora.api.policy import requirement, shared_use
from knora.domain.access import Principal, Role, SharePermission
from knora.domain.conversation import Viewer
from knora.domain.errors import BadRequest, Forbidden, NotFound, Unauthorized
from knora.ports.blobs import BlobStore
from knora.ports.parser import DocumentParsers
from knora.ports.reranker import Rerankers
from knora.ports.stream_log import StreamLog
from knora.root import Services
from knora.services.agent.approval import ApprovalBroker
from knora.services.agent.mcp_services import MCPServiceService
from knora.services.agent.service import AgentService
from knora.services.evaluation.service import EvaluationService
from knora.services.ingest.chunk_edit import ChunkService
from knora.services.ingest.service import IngestService
from knora.services.kb.models import ModelService
from knora.services.kb.service import KnowledgeBaseService
from knora.services.retrieval.faq import FaqService
from knora.services.retrieval.hybrid import HybridSearch
from knora.services.sessions.service import SessionService
from knora.services.sessions.suggestions import SuggestionService
from knora.services.streaming.service import ChatService
from knora.services.tenants.access import AccessService
from knora.services.tenants.accounts import looks_like_token
from knora.services.tenants.service import TenantService
from knora.services.websearch.providers import WebSearchProviderService
from knora.settings import Settings


# Dependencies are coroutines even when they do not await: FastAPI runs a plain ``def`` dependency in its
# thread pool, a thread hop per request for an attribute read.
async def get_services(request: Request) -> Services:
    services: Services = request.app.state.services
    return services


ServicesDep = Annotated[Services, Depends(get_services)]


async def _settings(s: ServicesDep) -> Settings:
    return s.settings


async def _tenants(s: ServicesDep) -> TenantService:
    return s.tenants


async def _kb_service(s: ServicesDep) -> KnowledgeBaseService:
    return s.kb_service


async def _ingest_service(s: ServicesDep) -> IngestService:
    return s.ingest_service


async def _chunk_service(s: ServicesDep) -> ChunkService:
    return s.chunk_service


async def _model_service(s: ServicesDep) -> ModelService:
    return s.model_service


async def _parsers(s: ServicesDep) -> DocumentParsers:
    return s.parsers


async def _search_service(s: ServicesDep) -> HybridSearch:
    return s.search_service


async def _faq_service(s: ServicesDep) -> FaqService:
    return s.faq_service


async def _session_service(s: ServicesDep) -> SessionService:
    return s.session_service


async def _chat_service(s: ServicesDep) -> ChatService:
    return s.chat_service


async def _stream_log(s: ServicesDep) -> StreamLog:
    return s.stream_log


async def _agent_service(s: ServicesDep) -> AgentService:
    return s.agent_service


async def _mcp_services(s: ServicesDep) -> MCPServiceService:
    return s.mcp_services


async def _mcp_toolset(s: ServicesDep) -> MCPToolset:
    return s.mcp_toolset


async def _approvals(s: ServicesDep) -> ApprovalBroker:
    return s.approvals


async def _blobs(s: ServicesDep) -> BlobStore:
    return s.blobs


async def _rerankers(s: ServicesDep) -> Rerankers:
    return s.rerankers


async def _evaluation(s: ServicesDep) -> EvaluationService:
    return s.evaluation


async def _web_search_providers(s: ServicesDep) -> WebSearchProviderService:
    return s.web_search_providers


async def _suggestions(s: ServicesDep) -> SuggestionService:
    return s.suggestions


async def _default_tenant_id(s: ServicesDep) -> int:
    return s.default_tenant_id


SettingsDep = Annotated[Settings, Depends(_settings)]
TenantsDep = Annotated[TenantService, Depends(_tenants)]
DefaultTenantDep = Annotated[int, Depends(_default_tenant_id)]
KBServiceDep = Annotated[KnowledgeBaseService, Depends(_kb_service)]
IngestServiceDep = Annotated[IngestService, Depends(_ingest_service)]
ChunkServiceDep = Annotated[ChunkService, Depends(_chunk_service)]
ModelServiceDep = Annotated[ModelService, Depends(_model_service)]
ParsersDep = Annotated[DocumentParsers, Depends(_parsers)]
SearchServiceDep = Annotated[HybridSearch, Depends(_search_service)]
FaqServiceDep = Annotated[FaqService, Depends(_faq_service)]
SessionServiceDep = Annotated[SessionService, Depends(_session_service)]
ChatServiceDep = Annotated[ChatService, Depends(_chat_service)]
StreamLogDep = Annotated[StreamLog, Depends(_stream_log)]
AgentServiceDep = Annotated[AgentService, Depends(_agent_service)]
MCPServicesDep = Annotated[MCPServiceService, Depends(_mcp_services)]
MCPToolsetDep = Annotated[MCPToolset, Depends(_mcp_toolset)]
ApprovalsDep = Annotated[ApprovalBroker, Depends(_approvals)]
BlobsDep = Annotated[BlobStore, Depends(_blobs)]
RerankersDep = Annotated[Rerankers, Depends(_rerankers)]
EvaluationDep = Annotated[EvaluationService, Depends(_evaluation)]
SuggestionsDep = Annotated[SuggestionService, Depends(_suggestions)]
WebSearchProvidersDep = Annotated[WebSearchProviderService, Depends(_web_search_providers)]


def credentials(headers: Mapping[str, str]) -> list[str]:
    """The credentials a request presents: X-API-Key first, then ``Authorization: Bearer`` (an API key, or a
    signed-in user's access token; the web UI sends either as a bearer token)."""
    key = headers.get("x-api-key", "").strip()
    bearer = headers.get("authorization", "")
    found = [key] if key else []
    if bearer.lower().startswith("bearer "):
        found.append(bearer[7:].strip())
    return found


def tenant_header(headers: Mapping[str, str]) -> int | None:
    """The tenant ``X-Tenant-ID`` names (WeKnora's UI sends the tenant chosen in its switcher), or None."""
    raw = headers.get("x-tenant-id", "").strip()
    if not raw:
        return None
    if not raw.isdigit() or len(raw) > 18:
        raise BadRequest("X-Tenant-ID: a tenant id (an integer)")
    return int(raw)


async def authenticate(headers: Mapping[str, str], access: AccessService) -> Principal | None:
    """The principal of the request's credentials, or None."""
    found = credentials(headers)
    if not found:
        return None
    return await access.resolve(found, tenant_header(headers))


# Set on the request's state by the rate limiter, which resolves the caller first: the answer is reused here
# instead of looking an unknown key up twice.
AUTHENTICATED = "authenticated"


async def _access(s: ServicesDep) -> AccessService:
    return s.access


AccessDep = Annotated[AccessService, Depends(_access)]


async def get_principal(request: Request, access: AccessDep) -> Principal:
    """The caller, allowed to call this route (``knora.api.policy`` decides): 401 without valid
    credentials, 403 below the route's role, 404 for a path naming another tenant."""
    route = request.scope.get("route")
    rule = requirement(request.method, getattr(route, "path_format", request.url.path))
    if not credentials(request.headers):
        raise Unauthorized("Unauthorized: missing authentication")
    state = request.scope.get("state", {})
    principal: Principal | None
    if AUTHENTICATED in state:
        principal = state[AUTHENTICATED]
    else:
        principal = await authenticate(request.headers, access)
    if principal is None:
        tokens = any(looks_like_token(c) for c in credentials(request.headers))
        raise Unauthorized("Unauthorized: invalid or expired token" if tokens
                           else "Unauthorized: invalid API key")
    if not rule.tenantless:
        if not principal.in_tenant:
            raise Forbidden("Forbidden: you are not a member of this tenant (choose one with X-Tenant-ID)")
        if rule.role is not None and not principal.role.covers(rule.role):
            raise Forbidden(f"Forbidden: this needs the {rule.role.value} role; "
                            f"you are {principal.role.value}")
    path_tenant = request.path_params.get("tenant_id")
    if path_tenant is not None and (not str(path_tenant).isdigit() or int(path_tenant) != principal.tenant_id
                                    or not principal.in_tenant):
        raise NotFound("No such tenant")
    need = shared_use(request.method, getattr(route, "path_format", "")) if principal.in_tenant else None
    if need is not None:
        principal = await _through_share(request, principal, need)
    session_id = request.path_params.get("session_id")
    if session_id is not None and principal.in_tenant:
        await _check_session_owner(request, principal, str(session_id))
    request.state.principal = principal
    request.state.tenant_id = principal.tenant_id
    return principal


async def _through_share(request: Request, principal: Principal, need: SharePermission) -> Principal:
    """The caller acting in the owning tenant of another tenant's knowledge base shared with it — the path's
    ``kb_id``, or the knowledge base of its ``knowledge_id`` — for this request only, with at most a viewer's
    role for a read share, a contributor's for an edit share; the caller unchanged when the knowledge base is
    its own or not shared with it (the route then answers 404). Owners pay one read (no share is read)."""
    services: Services = request.app.state.services
    store = services.search_service.store
    kb_id = request.path_params.get("kb_id")
    if kb_id is None:
        knowledge_id = request.path_params.get("knowledge_id")
        docs = await store.knowledge([str(knowledge_id)]) if knowledge_id is not None else []
        if not docs or docs[0].tenant_id == principal.tenant_id:
            return principal
        kb_id = docs[0].knowledge_base_id
    kbs = await store.knowledge_bases([str(kb_id)])
    if not kbs or kbs[0].tenant_id == principal.tenant_id:
        return principal
    share = await services.shares.grant(principal.tenant_id, kbs[0].id)
    if share is None or (need is SharePermission.EDIT and share.permission is not SharePermission.EDIT):
        return principal
    cap = Role.CONTRIBUTOR if share.permission is SharePermission.EDIT else Role.VIEWER
    role = principal.role if cap.covers(principal.role) else cap
    return replace(principal, tenant_id=kbs[0].tenant_id, role=role)


async def _check_session_owner(request: Request, principal: Principal, session_id: str) -> None:
    """A session a signed-in user made is theirs alone: to anyone else of the tenant it does not exist
    (``Viewer``). Unknown ids are left to the route (its own 404)."""
    services: Services = request.app.state.services
    await services.session_service.check_visible(principal.tenant_id, session_id, Viewer(principal.user_id))


PrincipalDep = Annotated[Principal, Depends(get_principal)]


async def get_viewer(principal: PrincipalDep) -> Viewer:
    return Viewer(principal.user_id)


ViewerDep = Annotated[Viewer, Depends(get_viewer)]


async def get_tenant_id(principal: PrincipalDep) -> int:
    return principal.tenant_id


TenantDep = Annotated[int, Depends(get_tenant_id)]


async def get_request_id(request: Request) -> str:
    request_id: str = request.state.request_id
    return request_id


RequestIdDep = Annotated[str, Depends(get_request_id)]
