"""The composition root: ``build_services(settings) -> Services`` builds every adapter and service, in one
place.

Each part is built once, in dependency order (store → retrieval → models → conversations → agent → chat), and
handed what it needs as typed values: nothing is looked up by name later, and nothing resolves another area
lazily. ``Services`` is a frozen record of what runs; the API (``knora/api/deps.py``) and the CLI read their
services from it. The only replaceable part of a running process is the turn runner by kind
(``Services.runners``), which a test or an embedding application may swap.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from concurrent.futures import Executor
from dataclasses import dataclass, field

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from knora.adapters.blobs.registry import build_blob_store
from knora.adapters.db.engine import make_engine, make_sessionmaker, migrate, startup_lock
from knora.adapters.db.repos._batch import GroupCommit
from knora.adapters.db.repos._mapping import GatedSessions
from knora.adapters.db.repos.accounts import SqlAccountRepo
from knora.adapters.db.repos.agents import SqlAgentRepo
from knora.adapters.db.repos.audit import SqlAuditRepo, SqlShareRepo
from knora.adapters.db.repos.chunk_revisions import SqlChunkRevisionRepo
from knora.adapters.db.repos.chunks import SqlChunkRepo
from knora.adapters.db.repos.faq import SqlFaqRepo
from knora.adapters.db.repos.jobs import SqlJobRepo
from knora.adapters.db.repos.kb_pins import SqlKnowledgeBasePinRepo
from knora.adapters.db.repos.kbs import SqlKnowledgeBaseRepo
from knora.adapters.db.repos.knowledge import SqlKnowledgeRepo
from knora.adapters.db.repos.mcp_services import SqlMCPServiceRepo
from knora.adapters.db.repos.messages import SqlMessageRepo
from knora.adapters.db.repos.models import SqlModelRepo
from knora.adapters.db.repos.search_reads import SqlSearchReads
from knora.adapters.db.repos.sessions import SqlSessionRepo
from knora.adapters.db.repos.tags import SqlTagRepo
from knora.adapters.db.repos.tenants import SqlTenantRepo
from knora.adapters.db.repos.web_search_providers import SqlWebSearchProviderRepo
from knora.adapters.duckdb_sandbox import DuckDBSandbox, SandboxLimits
from knora.adapters.embedders.lane_registry import build_embed_lane
from knora.adapters.embedders.registry import build_embedder
from knora.adapters.graph.sqlite_graph import SqlGraphStore
from knora.adapters.jobs.registry import build_job_queue
from knora.adapters.llm.registry import ChatModelRegistry, RerankerRegistry
from knora.adapters.mcp.approval_relay import RedisApprovalRelay
from knora.adapters.mcp.toolset import MCPToolset
from knora.adapters.parsers.runners import build_document_parsers
from knora.adapters.ratelimit.registry import build as build_rate_limiter
from knora.adapters.retrieval.registry import build_engine
from knora.adapters.secrets.fernet import build as build_secret_box
from knora.adapters.stream.registry import build as build_stream_log
from knora.adapters.stream.registry import build_leases
from knora.adapters.telemetry.registry import build_telemetry
from knora.adapters.tools._skills import load_skills, skills_prompt
from knora.adapters.tools.registry import CATALOG
from knora.adapters.websearch.fetch import PageFetcher
from knora.adapters.websearch.registry import build_web_search
from knora.domain.knowledge import Knowledge
from knora.netguard import Outbound
from knora.ports.blobs import BlobStore
from knora.ports.chat import ChatModel, ChatModels
from knora.ports.graph import GraphStore
from knora.ports.jobs import JobQueue
from knora.ports.parser import DocumentParsers, ParseLimits
from knora.ports.rate_limit import RateLimiter
from knora.ports.reranker import Rerankers
from knora.ports.retrieval import RetrievalEngine
from knora.ports.secrets import SecretBox
from knora.ports.store import Repositories
from knora.ports.stream_log import Pingable, StopSignals, StreamLog
from knora.ports.telemetry import Telemetry
from knora.ports.tool import ToolDeps
from knora.ports.websearch import WebSearch
from knora.services.agent.approval import ApprovalBroker
from knora.services.agent.assembly import build_registry
from knora.services.agent.mcp_services import MCPServiceService
from knora.services.agent.registry import ToolRegistry
from knora.services.agent.runner import RunnerDeps, SmartReasoningRunner
from knora.services.agent.service import AgentService
from knora.services.evaluation.runner import EvaluationDeps
from knora.services.evaluation.service import EvaluationService
from knora.services.ingest.chunk_edit import ChunkService
from knora.services.ingest.embedders import EmbedderRegistry
from knora.services.ingest.service import JOB_KIND, IngestDeps, IngestService
from knora.services.ingest.split_pool import ProcessSplitter
from knora.services.kb.copy import JOB_KIND as KB_COPY_JOB
from knora.services.kb.copy import KBCopyService
from knora.services.kb.models import ModelService
from knora.services.kb.move import JOB_KIND as KB_MOVE_JOB
from knora.services.kb.move import KnowledgeMoveService
from knora.services.kb.rebuild import JOB_KIND as KB_REBUILD_JOB
from knora.services.kb.rebuild import IndexRebuildService
from knora.services.kb.service import KnowledgeBaseService
from knora.services.kb.storage import view_of as storage_view_of
from knora.services.pipeline.deps import PipelineDeps
from knora.services.pipeline.runner import QuickAnswerRunner
from knora.services.refs import TenantRefs
from knora.services.retrieval.faq import FaqService
from knora.services.retrieval.hybrid import HybridSearch
from knora.services.sessions.service import SessionService
from knora.services.sessions.suggestions import SuggestionService
from knora.services.streaming.pacing import DeltaPacer
from knora.services.streaming.runners import TurnRunners
from knora.services.streaming.service import ChatService
from knora.services.tenants.access import AccessService
from knora.services.tenants.accounts import AccountService
from knora.services.tenants.audit import AuditService
from knora.services.tenants.members import MemberService
from knora.services.tenants.service import TenantService
from knora.services.tenants.shares import ShareService
from knora.services.websearch.providers import WebSearchProviderService
from knora.settings import Settings

log = logging.getLogger(__name__)

READY_TIMEOUT_SECONDS = 2.0  # each backing service must answer the readiness check within this

Closer = Callable[[], Awaitable[None]]
ToolRegistryFactory = Callable[[list[str], ToolDeps | None], ToolRegistry]


@dataclass(frozen=True)
class Overrides:
    """Parts a caller supplies instead of the settings' choice (tests, benchmarks, embedding applications)."""

    engine: Callable[[Settings], RetrievalEngine] | None = None  # instead of the settings' retrieval engine
    wrap_embedders: Callable[[EmbedderRegistry], EmbedderRegistry] | None = None  # e.g. a cache of vectors


@dataclass(frozen=True)
class Services:
    """Everything a running Knora holds. Built by ``build_services``; closed (once) by ``aclose``."""

    settings: Settings
    secrets: SecretBox  # seals stored credentials (knora secrets rotate)
    db: AsyncEngine
    sessions: async_sessionmaker[AsyncSession]
    tenants: TenantService
    accounts: AccountService  # users, passwords, login tokens
    members: MemberService  # tenants' members and invitations
    access: AccessService  # who a request is (API key or token)
    audit: AuditService
    shares: ShareService  # knowledge bases shared with other tenants
    default_tenant_id: int
    generated_api_key: str | None
    generated_owner: tuple[str, str] | None  # (login, password) of the owner account made on this start
    # knowledge: documents in, chunks out
    blobs: BlobStore
    embedders: EmbedderRegistry
    parsers: DocumentParsers
    repos: Repositories
    jobs: JobQueue
    kb_service: KnowledgeBaseService
    ingest_service: IngestService
    chunk_service: ChunkService
    model_service: ModelService
    # retrieval
    retrieval: RetrievalEngine
    search_service: HybridSearch
    faq_service: FaqService
    # models and the quick-answer pipeline
    chat_models: ChatModels
    rerankers: Rerankers
    web_search: WebSearch | None  # the operator's provider (settings)
    web_search_providers: WebSearchProviderService  # the tenants' providers; turns search with these
    graph_store: GraphStore
    page_fetcher: PageFetcher
    pipeline_deps: PipelineDeps
    # conversations and chat turns
    stream_log: StreamLog
    stop_signals: StopSignals
    session_service: SessionService
    suggestions: SuggestionService  # follow-up questions under an answer
    chat_service: ChatService
    quick_answer: QuickAnswerRunner  # the runners as built; ``runners`` holds the ones turns use
    smart_reasoning: SmartReasoningRunner
    runners: TurnRunners
    # the agent
    mcp_services: MCPServiceService
    approvals: ApprovalBroker
    mcp_toolset: MCPToolset
    tool_registry_factory: ToolRegistryFactory
    agent_service: AgentService
    rate_limiter: RateLimiter  # per-caller request budgets (knora/api/rate_limit.py)
    telemetry: Telemetry  # metrics (/metrics) and traces (OTLP when configured)
    evaluation: EvaluationService  # knora eval and /evaluation (docs/evaluation.md)
    kb_copy: KBCopyService  # knowledge-base copies as jobs (knora/services/kb/copy.py)
    kb_move: KnowledgeMoveService  # documents moved between knowledge bases, as jobs
    kb_rebuild: IndexRebuildService  # a knowledge base's index rebuilt from its chunks, as a job
    _closers: list[Closer] = field(default_factory=list, repr=False)

    async def readiness(self, timeout: float = READY_TIMEOUT_SECONDS) -> list[str]:
        """What keeps this process from serving (empty: ready): the database and, with the Redis stream log,
        Redis must answer within ``timeout`` seconds each. A load balancer's readiness probe
        (``GET /health/ready``) sends traffic elsewhere meanwhile; liveness (``/health``) stays up."""
        problems: list[str] = []

        async def database() -> None:
            async with self.db.connect() as conn:
                await conn.execute(text("SELECT 1"))

        checks: list[tuple[str, Callable[[], Awaitable[None]]]] = [("database", database)]
        named: tuple[tuple[str, object], ...] = (("stop signals", self.stop_signals),
                                                 ("stream log", self.stream_log))
        parts = {id(p): (n, p) for n, p in named}
        for name, part in parts.values():  # one check when one object is both
            if isinstance(part, Pingable):
                checks.append((name, part.ping))
        for name, check in checks:
            try:
                await asyncio.wait_for(check(), timeout)
            except Exception as exc:  # noqa: BLE001 - any failure means "not ready", named for the operator
                problems.append(f"{name}: {type(exc).__name__}: {exc}"[:300])
        return problems

    async def aclose(self) -> None:
        """Closes what was built, last built first; a failing closer is logged and the rest still run."""
        while self._closers:
            closer = self._closers.pop()
            try:
                await closer()
            except Exception:
                log.exception("error while closing")
        await self.db.dispose()


@dataclass(frozen=True)
class _Store:
    blobs: BlobStore
    embedders: EmbedderRegistry
    embed_lane: Executor  # where ingestion's passages are embedded (a niced worker process or thread)
    parsers: DocumentParsers
    repos: Repositories
    jobs: JobQueue


@dataclass(frozen=True)
class _Models:
    chat_models: ChatModelRegistry
    rerankers: RerankerRegistry
    web_search: WebSearch | None
    web_search_providers: WebSearchProviderService
    graph_store: SqlGraphStore
    page_fetcher: PageFetcher


def _outbound(s: Settings) -> Outbound:
    """The outbound policies every client factory gets: the operator's for URLs from settings, the tenant
    policy (public plus ``outbound_allowed_hosts``) for URLs stored through the API (knora.netguard)."""
    return Outbound.from_settings(s.effective_outbound_allowed_hosts, s.outbound_allow_private)


def _store(s: Settings, db: AsyncEngine, sessions: async_sessionmaker[AsyncSession], o: Overrides,
           box: SecretBox) -> _Store:
    gated = GatedSessions(sessions, asyncio.Lock() if s.is_sqlite else None)
    repos = Repositories(kbs=SqlKnowledgeBaseRepo(gated), knowledge=SqlKnowledgeRepo(gated),
                         chunks=SqlChunkRepo(gated), tags=SqlTagRepo(gated), models=SqlModelRepo(gated, box),
                         jobs=SqlJobRepo(gated), pins=SqlKnowledgeBasePinRepo(gated),
                         chunk_revisions=SqlChunkRevisionRepo(gated))
    lane = build_embed_lane(s.embed_isolation, s.background_nice)
    embedders = EmbedderRegistry(s, build_embedder, _outbound(s), lane=lane, rows=repos.models)
    if o.wrap_embedders is not None:
        embedders = o.wrap_embedders(embedders)
    return _Store(blobs=build_blob_store(s, db), embedders=embedders, embed_lane=lane,
                  parsers=build_document_parsers(s.parse_isolation, ParseLimits(
                      s.max_expanded_bytes, s.parse_memory_limit_mb, s.parse_timeout_seconds,
                      s.background_nice),
                      workers=s.parse_workers), repos=repos,
                  jobs=build_job_queue(s.job_queue, repos.jobs, workers=max(s.ingest_concurrency,
                                                                            s.ingest_workers),
                                       max_attempts=s.ingest_max_attempts, lease_seconds=s.job_lease_seconds,
                                       database_url=s.effective_database_url, redis_url=s.redis_url,
                                       redis_prefix=s.redis_prefix))


def _models(s: Settings, sessions: async_sessionmaker[AsyncSession], repos: Repositories,
            closers: list[Closer], telemetry: Telemetry, box: SecretBox) -> _Models:
    chat_models = ChatModelRegistry(s, repos.models, outbound=_outbound(s), metrics=telemetry.metrics)
    rerankers = RerankerRegistry(s, repos.models, outbound=_outbound(s))
    closers += [chat_models.close, rerankers.close]
    try:
        web_search = build_web_search(s.web_search_provider, s.web_search_base_url, s.web_search_api_key)
    except ValueError as exc:
        log.warning("web search disabled: %s", exc)
        web_search = None
    close_web = getattr(web_search, "close", None)
    if close_web is not None:
        closers.append(close_web)
    providers = WebSearchProviderService(SqlWebSearchProviderRepo(sessions, box), _outbound(s).tenant)
    closers.append(providers.close)
    fetcher = PageFetcher(allow_private=s.allow_private_network_fetch)
    closers.append(fetcher.close)
    return _Models(chat_models=chat_models, rerankers=rerankers, web_search=web_search,
                   web_search_providers=providers, graph_store=SqlGraphStore(sessions), page_fetcher=fetcher)


def _pipeline_deps(s: Settings, models: _Models, search: HybridSearch, store: _Store,
                   kbs: KnowledgeBaseService) -> PipelineDeps:
    knowledge_repo = store.repos.knowledge

    async def list_documents(tenant_id: int, kb_id: str, limit: int) -> list[Knowledge]:
        page = await knowledge_repo.list(tenant_id, kb_id, page=1, page_size=limit)
        return list(page.items)

    return PipelineDeps(chat_models=models.chat_models, rerankers=models.rerankers, search=search,
                        reads=search.store, web_search=models.web_search,
                        web_searches=models.web_search_providers, graph_store=models.graph_store,
                        fetch_page=models.page_fetcher, read_blob=store.blobs.get,
                        list_documents=list_documents,
                        list_kbs=kbs.list, sql=DuckDBSandbox(SandboxLimits.of(s)))


async def _approvals(s: Settings, closers: list[Closer]) -> ApprovalBroker:
    relay = RedisApprovalRelay(s.redis_url, s.redis_prefix) if s.stream_log == "redis" else None
    approvals = ApprovalBroker(relay=relay)
    try:
        await approvals.start()
    except Exception as exc:  # noqa: BLE001 - approvals still work on the replica that runs the turn
        log.warning("approval relay unavailable (%s); approvals are resolved per instance only", exc)
        await approvals.close()
        approvals = ApprovalBroker()
    closers.append(approvals.close)
    return approvals


def _lane_closer(lane: Executor) -> Closer:
    async def close() -> None:
        lane.shutdown(wait=False, cancel_futures=True)  # a batch in flight is dropped: its job resumes

    return close


def _worker_closer(jobs: JobQueue, tasks: list[asyncio.Task[None]]) -> Closer:
    async def close() -> None:
        for task in tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        await jobs.stop()

    return close


async def build_services(settings: Settings, overrides: Overrides | None = None) -> Services:
    """Migrates the database, builds every part, starts the job workers; ``await services.aclose()`` ends
    it."""
    s, o = settings, overrides or Overrides()
    s.data_dir.mkdir(parents=True, exist_ok=True)
    db = make_engine(s.effective_database_url)
    sessions = make_sessionmaker(db)
    telemetry = build_telemetry(s)
    closers: list[Closer] = [telemetry.tracer.close]  # closed last: spans of the last turns are exported
    # The retrieval engine starts before any migration: what it needs of the server (pgvector) is checked
    # before this process changes the database (issue 16 item 10); it owns its tables, not Alembic.
    engine = o.engine(s) if o.engine is not None else build_engine(s.effective_retrieval_engine, s)
    try:
        await engine.start()
    except BaseException:
        await db.dispose()
        raise
    closers.append(engine.close)
    tenants = TenantService(SqlTenantRepo(sessions))
    box = build_secret_box(s)
    rate_limiter = build_rate_limiter(s)
    closers.append(rate_limiter.close)
    accounts = AccountService(SqlAccountRepo(sessions), box, rate_limiter,
                              memory_kib=s.password_hash_memory_kib, iterations=s.password_hash_iterations)
    members = MemberService(SqlAccountRepo(sessions), tenants, accounts)
    # Replicas started at once: one at a time through migrations and the first start's default tenant.
    async with startup_lock(db):
        await migrate(db)
        default_tenant_id, generated_key = await tenants.ensure_default(s.api_key)
        await tenants.revoke_legacy_ui_keys(s.api_key)
        generated_owner = await members.ensure_owner(
            default_tenant_id, s.owner_email,
            s.owner_password.get_secret_value() if s.owner_password else None)

    store = _store(s, db, sessions, o, box)
    # after the job workers, which may be using them
    closers += [store.parsers.aclose, store.blobs.close, _lane_closer(store.embed_lane)]
    reads = SqlSearchReads(sessions)
    closers.append(reads.close)
    search = HybridSearch(reads, store.embedders, lambda _kb: engine,
                          default_embedder=lambda: str(s.embedder))
    faq = FaqService(SqlFaqRepo(sessions), search, lambda: engine, store.embedders)

    splitter = ProcessSplitter(nice=s.background_nice)  # large texts are split off the server process
    closers.append(splitter.aclose)
    deps = IngestDeps(settings=s, repos=store.repos, blobs=store.blobs, parsers=store.parsers,
                      embedders=store.embedders, jobs=store.jobs, retrieval=lambda: engine,
                      split=splitter, telemetry=telemetry)
    ingest = IngestService(deps)
    kbs = KnowledgeBaseService(store.repos, store.blobs, lambda: engine, lambda: s.embedder,
                               stop_ingestion=ingest.stop_knowledge_base, storage_view=storage_view_of(s))
    tenant_urls = _outbound(s).tenant
    model_service = ModelService(store.repos, store.embedders, tenant_urls, s.embedder_base_url)
    await model_service.load_cache()
    store.jobs.register(JOB_KIND, ingest.process, give_up=ingest.give_up)
    kb_copy = KBCopyService(store.repos, store.blobs, store.embedders, store.jobs, lambda: engine,
                             quota=ingest.quota)
    store.jobs.register(KB_COPY_JOB, kb_copy.run, give_up=kb_copy.give_up)
    kb_move = KnowledgeMoveService(kb_copy, ingest.reparse)
    store.jobs.register(KB_MOVE_JOB, kb_move.run, give_up=kb_move.give_up)
    kb_rebuild = IndexRebuildService(kb_copy)
    store.jobs.register(KB_REBUILD_JOB, kb_rebuild.run, give_up=kb_rebuild.give_up)

    models = _models(s, sessions, store.repos, closers, telemetry, box)
    deps.chat_models = models.chat_models  # the VLM that captions document images
    pipeline_deps = _pipeline_deps(settings, models, search, store, kbs)

    writer = GroupCommit(sessions)  # one writer for the turns' message and session writes (group commits)
    closers.append(writer.close)

    async def title_model(model_id: str | None, tenant_id: int) -> ChatModel | None:
        return await models.chat_models.get(model_id or None, tenant_id=tenant_id)

    session_service = SessionService(SqlSessionRepo(sessions, writer), SqlMessageRepo(sessions, writer),
                                     title_model)

    agent_repo, mcp_repo = SqlAgentRepo(sessions), SqlMCPServiceRepo(sessions, box)
    approvals = await _approvals(s, closers)
    mcp_toolset = MCPToolset(mcp_repo, stdio_enabled=s.mcp_stdio_enabled, approval=approvals,
                             policy=tenant_urls)
    agent_service = AgentService(agent_repo, store.repos.models,
                                 TenantRefs(store.repos.models, kbs=store.repos.kbs, mcp_services=mcp_repo,
                                            default_embedder=lambda: s.embedder))
    tool_deps = ToolDeps(settings=s, search_service=search, rerankers=models.rerankers,
                         chat_models=models.chat_models, repos=store.repos, web_search=models.web_search,
                         web_searches=models.web_search_providers,
                         graph_store=models.graph_store, blobs=store.blobs, conversations=session_service)

    def tool_registry_factory(names: list[str], deps: ToolDeps | None = None) -> ToolRegistry:
        return build_registry(names, deps or tool_deps, CATALOG)

    def skills(allowed: list[str] | None) -> str:
        return skills_prompt(load_skills(s.skills_dir, allowed))

    quick_answer = QuickAnswerRunner(pipeline_deps)
    smart_reasoning = SmartReasoningRunner(RunnerDeps(
        chat_models=models.chat_models, tool_deps=tool_deps, catalog=CATALOG, mcp_tools=mcp_toolset.tools,
        skills_prompt=skills if s.skills_enabled else None))
    runners = TurnRunners(quick=quick_answer, smart=smart_reasoning)

    shares = ShareService(SqlShareRepo(sessions), kbs, tenants, agent_service)
    agents = shares.usable_agent  # a turn's agent: the tenant's own, or one shared with it

    stream_log, stop_signals = build_stream_log(s)
    leases = build_leases(s)
    closers += [stream_log.close, stop_signals.close, leases.close]
    chat = ChatService(session_service, stream_log, stop_signals, runners.get, agents,
                       max_query_chars=s.max_query_chars,
                       pacer=DeltaPacer(s.stream_frame_budget, s.stream_max_hold_ms / 1000), leases=leases,
                       telemetry=telemetry)
    closers.append(chat.close)
    evaluation = EvaluationService(EvaluationDeps(
        kbs=kbs, ingest=ingest, knowledge=store.repos.knowledge, search=search, quick_answer=quick_answer,
        chat_models=models.chat_models, rerankers=models.rerankers, default_embedder=lambda: str(s.embedder)),
        lambda: s.evaluation_data_dir)
    closers.append(evaluation.aclose)  # closed first: a running evaluation still uses the rest
    if leases.shared:  # Redis: turns whose process died are closed by any replica once their lease lapses
        chat.start_sweeper()
    else:  # memory: only this process's turns are visible; a previous process's are closed past the log TTL
        await chat.close_interrupted(s.stream_ttl_seconds)

    services = Services(
        settings=s, secrets=box, db=db, sessions=sessions, tenants=tenants, accounts=accounts,
        members=members,
        access=AccessService(tenants, accounts), audit=AuditService(SqlAuditRepo(sessions)),
        shares=shares,
        default_tenant_id=default_tenant_id, generated_owner=generated_owner,
        generated_api_key=generated_key, blobs=store.blobs, embedders=store.embedders, parsers=store.parsers,
        repos=store.repos, jobs=store.jobs, kb_service=kbs, ingest_service=ingest,
        chunk_service=ChunkService(deps),
        model_service=model_service, retrieval=engine, search_service=search, faq_service=faq,
        chat_models=models.chat_models, rerankers=models.rerankers, web_search=models.web_search,
        web_search_providers=models.web_search_providers,
        graph_store=models.graph_store, page_fetcher=models.page_fetcher, pipeline_deps=pipeline_deps,
        stream_log=stream_log, stop_signals=stop_signals, session_service=session_service, chat_service=chat,
        suggestions=SuggestionService(session_service, title_model),
        quick_answer=quick_answer, smart_reasoning=smart_reasoning, runners=runners,
        mcp_services=MCPServiceService(mcp_repo, stdio_enabled=s.mcp_stdio_enabled, policy=tenant_urls),
        approvals=approvals,
        mcp_toolset=mcp_toolset, tool_registry_factory=tool_registry_factory, agent_service=agent_service,
        rate_limiter=rate_limiter, telemetry=telemetry, evaluation=evaluation, kb_copy=kb_copy,
        kb_move=kb_move, kb_rebuild=kb_rebuild,
        _closers=closers)
    jobs_repo = store.repos.jobs

    async def queue_depth() -> None:
        telemetry.metrics.queue_depth(await jobs_repo.count_active())

    telemetry.metrics.add_probe(queue_depth)
    await _start_workers(services, store.jobs)
    return services


async def _start_workers(services: Services, jobs: JobQueue) -> None:
    """Job workers start once everything is built (a job must never index into nothing); the sample knowledge
    base is ingested in the background so that start-up stays quick."""
    try:
        await services.ingest_service.requeue_orphans()
    except Exception:
        log.exception("could not re-queue documents left without a job")
    await jobs.start()
    tasks: list[asyncio.Task[None]] = []
    services._closers.append(_worker_closer(jobs, tasks))
    if services.settings.sample_kb:
        tasks.append(asyncio.create_task(_sample_kb(services), name="knora-sample-kb"))


async def _sample_kb(services: Services) -> None:
    from knora.services.ingest.sample import ensure_sample_kb

    try:
        # under the start-up lock: replicas starting together on an empty database make one sample KB, not
        # one each (it is looked up by name, then created); only its files' acceptance is inside, not parsing
        async with startup_lock(services.db):
            await ensure_sample_kb(services.settings, services.default_tenant_id, services.kb_service,
                                   services.ingest_service)
    except Exception:
        log.exception("could not ingest the sample knowledge base")
