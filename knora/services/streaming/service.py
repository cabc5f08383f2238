"""Chat turns: intake, the background run, stop and resume (spec §5.6–5.9, api §2.4–2.5).

A turn's messages exist before the first byte is streamed (assistant: ``is_completed`` false, empty content),
and the runner runs in a task that never depends on the HTTP connection: the route only *reads* the stream
log. A stop reaches whichever process runs the turn through ``StopSignals``; that process cancels the
runner, flushes held text, appends the ``stop`` entry and saves the partial answer (never as a fallback). If
no process answers a stop (the one running the turn died), the stop endpoint ends the turn itself from what
the log holds, so an assistant message is never left incomplete forever.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from knora.domain.agent_settings import AgentSettings
from knora.domain.common import utcnow
from knora.domain.conversation import Message, Session
from knora.domain.errors import AppError, BadRequest, Forbidden, NotFound
from knora.domain.models import AgentConfig
from knora.domain.stream import BusEvent, StreamEvent
from knora.pacing import FOREGROUND
from knora.ports.stream_log import StopSignals, StreamLog
from knora.ports.telemetry import NO_TELEMETRY, Telemetry
from knora.ports.turn import HistoryTurn, TurnContext, TurnOutcome, TurnRequest, TurnRunner
from knora.ports.turn_lease import TurnLeases
from knora.services.citations.registry import ReferenceRegistry
from knora.services.sessions.service import DEFAULT_HISTORY_ROUNDS, SessionService
from knora.services.streaming.bus import EventBus
from knora.services.streaming.durable import Retries, attempt
from knora.services.streaming.ending import (
    close_abandoned,
    completed_fields,
    drain,
    end_orphan,
    terminal_events,
)
from knora.services.streaming.handler import StreamHandler
from knora.services.streaming.intake import ChatBody, check_images, merge_targets, shared_agent_scope
from knora.services.streaming.observe import TurnObserver
from knora.services.streaming.pacing import DeltaPacer
from knora.services.streaming.unsaved import UnsavedTurn, UnsavedTurns

log = logging.getLogger(__name__)

AgentResolver = Callable[[int, str], Awaitable[AgentConfig | None]]
RunnerResolver = Callable[[str], TurnRunner | None]  # "quick" | "smart" -> runner (None: not available)

TITLE_TIMEOUT_S = 30.0
# The two answers of POST /sessions/:id/stop, exactly as WeKnora words them (spec weknora-api §2.5): a client
# tells a stopped turn from one that had already finished by the message, with no new field to learn.
STOPPED = "Generation stopped"
ALREADY_COMPLETED = "Message already completed"


@dataclass
class StartedTurn:
    session_id: str
    request_id: str
    user_message_id: str
    assistant_message_id: str
    wants_title: bool


class ChatService:
    def __init__(self, sessions: SessionService, stream_log: StreamLog, stop_signals: StopSignals,
                 runners: RunnerResolver, agents: AgentResolver | None = None, *,
                 max_query_chars: int = 16384, stop_grace_seconds: float = 5.0,
                 pacer: DeltaPacer | None = None, leases: TurnLeases | None = None,
                 retries: Retries | None = None, telemetry: Telemetry = NO_TELEMETRY) -> None:
        self.sessions = sessions
        self.telemetry = telemetry
        self.log = stream_log
        self.stops = stop_signals
        self._runners = runners
        self._agents = agents
        self.max_query_chars = max_query_chars
        self.stop_grace_seconds = stop_grace_seconds
        self.pacer = pacer or DeltaPacer()  # one per process: all its turns' text deltas share a frame budget
        self._tasks: dict[str, asyncio.Task[None]] = {}  # assistant message id -> running turn
        self.leases = leases  # None: no process but this one can run a turn (tests)
        self.retries = retries or Retries()
        self._unsaved: set[str] = set()  # ended turns whose message waits for a retried save
        self._lease_task: asyncio.Task[None] | None = None
        self._sweeper: asyncio.Task[None] | None = None
        self.unsaved = UnsavedTurns(self.pacer, telemetry)
        telemetry.metrics.watch_active_turns(lambda: len(self._tasks) + self.unsaved.running)

    # --- intake ---------------------------------------------------------------------------------------------
    async def _resolve_agent(self, tenant_id: int, agent_id: str) -> AgentConfig | None:
        if not agent_id or self._agents is None:
            return None
        try:
            return await self._agents(tenant_id, agent_id)
        except NotFound:
            return None  # an unknown own agent silently means "no agent" (spec §5.10 step 6)

    def _check_query(self, body: ChatBody) -> None:
        if not body.query.strip():
            raise BadRequest("Query content cannot be empty")
        if len(body.query) > self.max_query_chars:
            raise AppError(f"Query is too long: at most {self.max_query_chars} characters", status=413,
                           code=1000)

    async def _plan(self, tenant_id: int, body: ChatBody,
                    mode: str) -> tuple[AgentConfig | None, AgentSettings, str, TurnRunner]:
        """The turn's agent, its settings, the runner kind and the runner (spec §5.10 steps 5–7)."""
        agent = await self._resolve_agent(tenant_id, body.agent_id)
        settings = agent.settings() if agent is not None else AgentSettings()
        kind = "quick"
        if mode == "agent":
            if agent is None and body.agent_enabled:
                if body.agent_id:  # e.g. deleted, or another tenant's no longer shared with this one
                    raise NotFound("Agent not found")
                raise BadRequest("agent_id is required when agent mode is enabled")
            if agent is not None and settings.agent_mode == "smart-reasoning":
                kind = "smart" if self._runners("smart") is not None else "quick"
        runner = self._runners(kind)
        if runner is None:
            raise AppError("No answering runtime is configured", status=503, code=1008)
        if body.images and not (agent is not None and settings.image_upload_enabled):
            raise BadRequest("Image upload is not enabled for this agent")
        if body.images and (why := check_images(body.images)):
            raise BadRequest(why)
        return agent, settings, kind, runner

    async def start(self, tenant_id: int, session_id: str, body: ChatBody, request_id: str,
                    mode: str = "knowledge") -> StartedTurn:
        self._check_query(body)
        release = FOREGROUND.hold()  # from intake to the turn's end, ingestion's bulk loops step aside
        try:
            started = await self._start(tenant_id, session_id, body, request_id, mode)
        except BaseException:
            release()
            raise
        task = self._tasks.get(started.assistant_message_id)
        if task is None:
            release()
        else:
            task.add_done_callback(lambda _task: release())
        return started

    async def _start(self, tenant_id: int, session_id: str, body: ChatBody, request_id: str,
                     mode: str) -> StartedTurn:
        session = await self.sessions.get(tenant_id, session_id)
        agent, settings, kind, runner = await self._plan(tenant_id, body, mode)
        kb_ids, knowledge_ids, tag_ids = shared_agent_scope(agent, tenant_id, *merge_targets(body))
        lent = agent is not None and agent.lent_to(tenant_id)
        model_id = "" if lent else body.summary_model_id  # a lent agent runs on its owner's models only

        now = utcnow()
        user = Message(session_id=session_id, tenant_id=tenant_id, request_id=request_id, role="user",
                       content=body.query, is_completed=True, mentioned_items=body.mentioned_items,
                       images=[{"url": i.get("data", ""), "caption": ""} for i in body.images],
                       channel=body.channel, agent_id=body.agent_id, created_at=now, updated_at=now)
        assistant = Message(session_id=session_id, tenant_id=tenant_id, request_id=request_id,
                            role="assistant", content="", is_completed=False, channel=body.channel,
                            agent_id=body.agent_id, model_id=model_id, created_at=now,
                            updated_at=now)
        state = {"agent_id": body.agent_id, "agent_enabled": body.agent_enabled,
                 "model_id": model_id, "knowledge_base_ids": kb_ids,
                 "knowledge_ids": knowledge_ids, "tag_ids": tag_ids,
                 "mcp_service_ids": body.mcp_service_ids, "skill_names": body.skill_names,
                 "mentioned_items": body.mentioned_items, "web_search_enabled": body.web_search_enabled}
        if self.leases is not None:  # before the message exists: no sweep can see it without its lease
            await self.leases.hold([assistant.id])
        await self.sessions.messages.create_pair(user, assistant, {"last_request_state": state})
        await self.log.append(session_id, assistant.id, StreamEvent(
            id=f"query-{time.time_ns()}", type="agent_query", done=True,
            data={"session_id": session_id, "assistant_message_id": assistant.id}))

        req = TurnRequest(
            tenant_id=tenant_id, session_id=session_id, request_id=request_id, user_message_id=user.id,
            assistant_message_id=assistant.id, query=body.query, knowledge_base_ids=kb_ids,
            knowledge_ids=knowledge_ids, tag_ids=tag_ids, web_search_enabled=body.web_search_enabled,
            agent=agent,
            summary_model_id=model_id or None, citations_enabled=body.citations_enabled,
            mentioned_items=body.mentioned_items,
            images=[str(i.get("data", "")) for i in body.images], mcp_service_ids=body.mcp_service_ids,
            skill_names=body.skill_names, language=body.language, session_user_id=session.user_id)
        wants_title = not session.title and (kind == "smart" or not body.disable_title)
        max_rounds = settings.history_turns if agent is not None else DEFAULT_HISTORY_ROUNDS
        task = asyncio.create_task(self._run(runner, req, kind, wants_title, max_rounds),
                                   name=f"turn-{assistant.id}")
        self._tasks[assistant.id] = task
        task.add_done_callback(functools.partial(self._forget, assistant.id))
        if self.leases is not None and (self._lease_task is None or self._lease_task.done()):
            self._lease_task = asyncio.create_task(self._keep_leases(self.leases), name="knora-turn-leases")
        return StartedTurn(session_id, request_id, user.id, assistant.id, wants_title)

    async def start_unsaved(self, tenant_id: int, body: ChatBody, request_id: str, mode: str,
                            history: list[HistoryTurn]) -> UnsavedTurn:
        """A turn over the caller's own ``history`` that stores nothing (``unsaved.py``): checked and planned
        as ``start``, with fresh ids that name no session or message."""
        self._check_query(body)
        agent, _, kind, runner = await self._plan(tenant_id, body, mode)
        kb_ids, knowledge_ids, tag_ids = shared_agent_scope(agent, tenant_id, *merge_targets(body))
        model_id = "" if agent is not None and agent.lent_to(tenant_id) else body.summary_model_id  # as above
        req = TurnRequest(
            tenant_id=tenant_id, session_id=str(uuid.uuid4()), request_id=request_id,
            user_message_id=str(uuid.uuid4()), assistant_message_id=str(uuid.uuid4()), query=body.query,
            knowledge_base_ids=kb_ids, knowledge_ids=knowledge_ids, tag_ids=tag_ids,
            web_search_enabled=body.web_search_enabled, agent=agent,
            summary_model_id=model_id or None, citations_enabled=body.citations_enabled,
            history=history, language=body.language)
        return self.unsaved.start(runner, req, kind)

    def _forget(self, message_id: str, task: asyncio.Task[None]) -> None:
        if self._tasks.get(message_id) is task:  # by key: a scan of every running turn per turn is O(n²)
            del self._tasks[message_id]

    async def _keep_leases(self, leases: TurnLeases) -> None:
        """Refreshes the leases of this process's turns (one call for all) while it has any."""
        while self._tasks or self._unsaved:
            await asyncio.sleep(leases.ttl_seconds / 3)
            ids = [*self._tasks, *self._unsaved]
            if ids:
                await attempt(functools.partial(leases.hold, ids), "refreshing turn leases",
                              leases.ttl_seconds / 3)

    # --- the background run ---------------------------------------------------------------------------------
    async def _run(self, runner: TurnRunner, req: TurnRequest, kind: str, wants_title: bool,
                   max_rounds: int = DEFAULT_HISTORY_ROUNDS) -> None:
        sid, mid = req.session_id, req.assistant_message_id
        started = time.monotonic()
        try:  # loaded here, off the request path: the response starts streaming without waiting for it
            history = await self.sessions.history(sid, max_rounds, exclude_request_id=req.request_id)
            if history:  # a first turn has none: keep the request as it is
                req = req.model_copy(update={"history": history})
        except Exception:  # as WeKnora's load_history: logged, and the turn goes on without it
            log.warning("history of session %s not loaded", sid, exc_info=True)
        registry = ReferenceRegistry(req.citations_enabled)
        bus = EventBus(self.pacer)
        handler = StreamHandler(self.log, sid, mid, registry)
        handler.subscribe(bus)
        observer = TurnObserver(self.telemetry, kind, {"knora.tenant_id": req.tenant_id,
                                                       "knora.session_id": sid, "knora.message_id": mid})
        observer.subscribe(bus)
        ctx = TurnContext(bus=bus, references=registry)
        title_task = (asyncio.create_task(self.sessions.generate_title(req.tenant_id, sid, req.query,
                                                                        req.summary_model_id))
                      if wants_title else None)
        runner_task = asyncio.create_task(runner.run(req, ctx))
        stop_task = asyncio.create_task(self.stops.wait_for_stop(mid))
        outcome: TurnOutcome | None = None
        failure: BaseException | None = None
        reason = ""
        try:
            done, _ = await asyncio.wait({runner_task, stop_task}, return_when=asyncio.FIRST_COMPLETED)
            if runner_task not in done:
                if stop_task.exception() is None:
                    reason = "user_requested"
                else:
                    await asyncio.wait({runner_task})  # the stop watcher broke (e.g. Redis down): just finish
        except asyncio.CancelledError:
            reason = "shutdown"
        if reason:
            ctx.cancelled.set()
            runner_task.cancel()
            await asyncio.gather(runner_task, return_exceptions=True)
        else:
            try:
                outcome = runner_task.result()
            except Exception as exc:
                failure = exc
                log.exception("turn %s failed", mid)
        await self._end_watcher(stop_task, mid)
        try:
            await asyncio.shield(self._finish(req, kind, ctx, handler, registry, outcome, failure, reason,
                                              started, title_task))
        finally:
            observer.end({"user_requested": "stopped", "shutdown": "shutdown"}.get(
                reason, "failed" if failure is not None else "completed"))

    async def _end_watcher(self, stop_task: asyncio.Task[None], mid: str) -> None:
        """Ends the stop watcher before the turn ends, bounded: the turn's terminal entry never waits on a
        watcher that lost its cancellation (issue 16, item 1 — the Redis watcher can no longer lose one, and
        no ``StopSignals`` may hold a finished turn hostage). The cancel is repeated, as ``end_task`` does."""
        deadline = time.monotonic() + self.stop_grace_seconds
        while not stop_task.done() and time.monotonic() < deadline:
            stop_task.cancel()
            await asyncio.wait({stop_task}, timeout=min(0.5, max(deadline - time.monotonic(), 0.0)))
        if not stop_task.done():
            log.error("stop watcher of turn %s ignored its cancellation; the turn ends without it", mid)
        elif not stop_task.cancelled():
            stop_task.exception()  # retrieved (the watcher's own failure was handled above)

    async def _finish(self, req: TurnRequest, kind: str, ctx: TurnContext, handler: StreamHandler,
                      registry: ReferenceRegistry, outcome: TurnOutcome | None, failure: BaseException | None,
                      reason: str, started: float, title_task: asyncio.Task[str] | None) -> None:
        """Ends the turn whatever failed on the way: the log always gets its terminal entry and the message
        is always saved — at once, or by a background retry once the store is back (issue 20, 6b and 7)."""
        sid, mid = req.session_id, req.assistant_message_id
        await drain(kind, ctx, handler, registry, outcome, failure, mid)
        done = completed_fields(req, ctx, handler, registry, outcome, reason, started)
        ends = terminal_events(sid, mid, reason, done, handler.log_error, done.fields)
        user_fields: dict[str, Any] = {}
        if outcome is not None and outcome.rendered_content:
            user_fields["rendered_content"] = outcome.rendered_content
        if outcome is not None and outcome.image_description and req.images:
            # spec §2.3: the description becomes the first image's caption, so later turns' history has it
            user_fields["images"] = [{"url": url, "caption": outcome.image_description if i == 0 else ""}
                                     for i, url in enumerate(req.images)]

        async def save() -> None:
            await self.sessions.messages.complete(mid, done.fields, user_message_id=req.user_message_id,
                                                  user_fields=user_fields or None)

        saved = await attempt(save, f"saving turn {mid}")
        if saved:
            await attempt(lambda: self._release(mid), f"releasing the lease of turn {mid}", 5.0)
        else:  # the lease is kept while the answer waits for the database: no replica closes it meanwhile
            self._unsaved.add(mid)
            self.retries.spawn([(save, f"saving turn {mid}"),
                                (lambda: self._release(mid), f"releasing the lease of turn {mid}")],
                               f"save-{mid}", on_done=lambda: self._unsaved.discard(mid))
        await self._append_in_order(sid, mid, ends)
        if title_task is not None:
            try:
                title = await asyncio.wait_for(title_task, TITLE_TIMEOUT_S)
                if not reason:
                    await ctx.bus.emit(BusEvent.SESSION_TITLE, {"session_id": sid, "title": title})
            except Exception:
                log.warning("title for session %s not generated", sid, exc_info=True)

    async def _append_in_order(self, sid: str, mid: str, events: list[StreamEvent]) -> None:
        """Appends ``events``; from the first that fails on, they are retried in the background, in order."""
        for i, event in enumerate(events):
            if not await attempt(functools.partial(self.log.append, sid, mid, event),
                                 f"{event.type} entry of turn {mid}"):
                self.retries.spawn([(functools.partial(self.log.append, sid, mid, e),
                                     f"{e.type} entry of turn {mid}") for e in events[i:]], f"log-{mid}")
                return

    async def _release(self, mid: str) -> None:
        if self.leases is not None:
            await self.leases.release(mid)

    # --- stop -----------------------------------------------------------------------------------------------
    async def stop(self, tenant_id: int, session_id: str, message_id: str) -> str:
        message = await self.sessions.get_message(tenant_id, message_id)
        if message is None:
            raise NotFound("Message not found")
        if message.session_id != session_id:
            raise Forbidden("Message does not belong to this session")
        if await self.sessions.sessions.get(tenant_id, session_id) is None:
            raise NotFound("Session not found")
        if message.is_completed:
            return ALREADY_COMPLETED
        await self.stops.request_stop(message_id)
        ended = await self._wait_for_end(session_id, message_id, self.stop_grace_seconds)
        if ended is None:
            await self._end_orphan(message)
            return STOPPED
        # The turn may have finished between the check above and the stop taking effect: its last event says
        # which happened, and the caller is told that rather than "stopped" (issue 20 item 10).
        return ALREADY_COMPLETED if ended == "complete" else STOPPED

    async def _wait_for_end(self, session_id: str, message_id: str, seconds: float) -> str | None:
        """The type of the event that ended the turn (``stop`` or ``complete``), None if none came in time."""
        try:
            async with asyncio.timeout(seconds):
                async for event in self.log.follow(session_id, message_id):
                    if event is not None and event.type in ("stop", "complete"):
                        return event.type
        except TimeoutError:
            return None
        return None

    async def _end_orphan(self, message: Message) -> None:
        await end_orphan(message, self.log, self.sessions.messages)

    # --- resume ---------------------------------------------------------------------------------------------
    async def resume_target(self, tenant_id: int, session_id: str, message_id: str) -> Message:
        """Checks for continue-stream; returns the assistant message whose log is to be replayed."""
        if not message_id:
            raise BadRequest("message_id is required")
        session: Session = await self.sessions.get(tenant_id, session_id)
        message = await self.sessions.get_message(tenant_id, message_id)
        if message is None or message.session_id != session.id:
            raise NotFound("Incomplete message not found")
        if not await self.log.exists(session_id, message_id):
            if not message.is_completed and not self.is_running(message_id):
                # The log is gone (expired, or the process that ran the turn restarted): nothing can finish
                # this turn any more, so close it instead of leaving the UI to retry it forever.
                # The text is gone with the log: the message keeps what the database has, flagged as cut.
                await self.sessions.messages.complete(message_id, {"is_completed": True, "debug": {
                    "stopped": "log_expired", "truncated": True}})
            raise NotFound("No stream events found")
        return message

    async def close_interrupted(self, older_than_seconds: float) -> int:
        """At start-up with a per-process (memory) log: turns a previous process left incomplete can never
        finish. Only turns older than the log's TTL, so another process on the same database (``knora ask``
        next to ``knora serve``) keeps its running turns: a memory log has no lease other processes see."""
        return await self.close_orphans(older_than_seconds)

    async def close_orphans(self, older_than_seconds: float | None = None) -> int:
        """Closes incomplete turns no live process runs (issue 20, 6c): not this one's, and with no lease
        held by another (on Redis a crashed process's leases lapse within their TTL; a live replica's do
        not). Each is closed by one process only, saving what its log holds (``_close_abandoned``).
        ``older_than_seconds`` defaults to the lease TTL, a grace for turns from before leases existed."""
        grace = older_than_seconds if older_than_seconds is not None else (
            self.leases.ttl_seconds if self.leases is not None else 0.0)
        stale = await self.sessions.messages.incomplete(older_than=utcnow() - timedelta(seconds=grace))
        candidates = [m for m in stale if not self.is_running(m.id) and m.id not in self._unsaved]
        if self.leases is not None and candidates:
            alive = await self.leases.held([m.id for m in candidates])
            candidates = [m for m in candidates if m.id not in alive]
        closed = 0
        for m in candidates:
            if self.leases is None or await self.leases.claim_close(m.id):
                await self._close_abandoned(m)
                closed += 1
        return closed

    async def _close_abandoned(self, message: Message) -> None:
        await close_abandoned(message, self.log, self.sessions.messages, self._append_in_order)

    def start_sweeper(self, interval: float | None = None) -> None:
        """Closes abandoned turns now (the start-up sweep) and every ``interval`` seconds (default: half the
        lease TTL) — a replica that dies while others live has its turns closed by them within about 1.5
        lease TTLs, without waiting for a restart (issue 16, item 6)."""
        every = interval if interval is not None else (self.leases.ttl_seconds / 2 if self.leases else 60.0)

        async def sweep() -> None:
            while True:
                try:
                    await self.close_orphans()
                except Exception:
                    log.warning("closing abandoned turns failed", exc_info=True)
                await asyncio.sleep(every)

        if self._sweeper is None or self._sweeper.done():
            self._sweeper = asyncio.create_task(sweep(), name="knora-turn-sweeper")

    def is_running(self, message_id: str) -> bool:
        return message_id in self._tasks

    async def wait_idle(self) -> None:
        """Waits for every running turn (tests, orderly shutdown)."""
        while self._tasks:
            await asyncio.gather(*self._tasks.values(), return_exceptions=True)
        await self.retries.wait()

    async def close(self) -> None:
        await self.unsaved.close()
        self.pacer.close()
        for task in list(self._tasks.values()):
            task.cancel()
        await asyncio.gather(*self._tasks.values(), return_exceptions=True)
        for extra in (self._sweeper, self._lease_task):
            if extra is not None:
                extra.cancel()
                await asyncio.gather(extra, return_exceptions=True)
        await self.retries.close()
