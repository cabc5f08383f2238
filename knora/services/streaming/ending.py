"""How a chat turn ends: the assistant message's final fields, the log entries that end the stream, and the
closing of a turn whose process is gone (issue 20, 6b and 6c). Split from ``service.py``, which runs turns."""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from knora.domain.conversation import Message
from knora.domain.stream import BusEvent, StreamEvent, stream_event
from knora.ports.conversation_store import MessageRepo
from knora.ports.stream_log import StreamLog
from knora.ports.turn import TurnContext, TurnOutcome, TurnRequest
from knora.services.citations.registry import ReferenceRegistry
from knora.services.streaming.bus import EventBus
from knora.services.streaming.handler import StreamHandler

log = logging.getLogger(__name__)

Append = Callable[[str, str, list[StreamEvent]], Awaitable[None]]  # (session, message, entries) in order


@dataclass(frozen=True)
class CompletedTurn:
    """What the assistant message is completed with, and the figures the ``complete`` event carries."""

    fields: dict[str, Any]
    steps: list[Any]
    duration_ms: int


def turn_debug(ctx: TurnContext, handler: StreamHandler, outcome: TurnOutcome | None,
                reason: str) -> dict[str, Any]:
    debug: dict[str, Any] = {"timings": dict(ctx.timings), "stages": handler.stage_timings}
    if handler.errors:
        debug["errors"] = handler.errors
    if reason:
        debug["stopped"] = reason
    if ctx.usage is not None:  # the answering model's reported token counts (the /v1 API's ``usage``)
        debug["usage"] = ctx.usage.model_dump()
    if outcome is not None:
        debug.update(outcome.debug)
    return debug


def completed_fields(req: TurnRequest, ctx: TurnContext, handler: StreamHandler, registry: ReferenceRegistry,
                     outcome: TurnOutcome | None, reason: str, started: float) -> CompletedTurn:
    """The assistant message's final fields: what was streamed (or the runner's answer when nothing was),
    the runner's references and steps when it has them (else the stream's), debug and timing."""
    content = handler.final_answer
    if outcome is not None and not content and outcome.answer:
        content = registry.decode_output(outcome.answer)
    refs = [r.model_dump(mode="json") for r in outcome.references] if outcome and outcome.references \
        else handler.references
    steps = (outcome.agent_steps if outcome and outcome.agent_steps else handler.timeline_steps())
    duration_ms = int((time.monotonic() - started) * 1000)
    fields: dict[str, Any] = {
        "content": content, "knowledge_references": refs, "agent_steps": steps, "is_completed": True,
        "is_fallback": bool(not reason and outcome is not None
                            and (outcome.is_fallback or handler.is_fallback)),
        "agent_duration_ms": duration_ms, "debug": turn_debug(ctx, handler, outcome, reason),
        "model_id": outcome.model_id if outcome and outcome.model_id else req.summary_model_id or ""}
    return CompletedTurn(fields, steps, duration_ms)


STREAM_CUT = "The stream was interrupted ({}); the answer is incomplete"
INTERRUPTED = "The turn was interrupted: the process running it stopped; the answer is incomplete"


def terminal_events(sid: str, mid: str, reason: str, done: CompletedTurn, log_error: BaseException | None,
                     fields: dict[str, Any]) -> list[StreamEvent]:
    """The entries that end the turn's log: ``stop`` or ``complete``, after an error frame when the log failed
    during the turn (followers then know the text they got is cut). Flags ``fields`` as truncated too."""
    events: list[StreamEvent] = []
    now = time.time_ns()
    if log_error is not None:
        cut = STREAM_CUT.format(str(log_error) or type(log_error).__name__)
        debug = fields["debug"]
        debug["truncated"] = True
        debug["errors"] = [*debug.get("errors", []), {"stage": "stream", "error": cut}]
        fields["is_fallback"] = False
        events.append(stream_event("error", cut, True, {"stage": "stream", "error": cut}, f"error-{now}"))
    if reason:
        events.append(stream_event("stop", "", True, {"session_id": sid, "message_id": mid, "reason": reason},
                                   f"stop-{now}"))
    else:
        events.append(stream_event("complete", "", True, {"total_steps": len(done.steps),
                                                          "total_duration_ms": done.duration_ms},
                                   f"complete-{now}"))
    return events


async def best_effort(op: Callable[[], Awaitable[Any]], what: str) -> None:
    """A step of a turn's end whose failure must not keep the later ones (the terminal entry) from running."""
    try:
        await op()
    except Exception:
        log.warning("%s failed", what, exc_info=True)


async def drain(kind: str, ctx: TurnContext, handler: StreamHandler, registry: ReferenceRegistry,
                outcome: TurnOutcome | None, failure: BaseException | None, mid: str) -> None:
    """Everything a turn still owes its stream before it ends, in order: text the pacer holds, the error
    frame of a failure, an answer the runner returned without streaming it, text the decoders hold. Each
    step is best effort, so the terminal entry that follows is always written."""
    bus = ctx.bus
    assert isinstance(bus, EventBus)  # built by the chat service; the runners see it only through the port
    await best_effort(bus.close, f"flushing turn {mid}")
    if failure is not None and handler.log_error is None:
        stage = "agent_execution" if kind == "smart" else "knowledge_qa_execution"
        error = str(failure) or type(failure).__name__
        await best_effort(lambda: ctx.bus.emit(BusEvent.ERROR, {"error": error, "stage": stage}),
                          f"error frame of turn {mid}")
    if outcome is not None and outcome.answer and not handler.answer_streamed:
        answer = registry.decode_output(outcome.answer)
        await best_effort(lambda: handler.fallback_answer(answer), f"fallback answer of turn {mid}")
    await best_effort(handler.flush_all, f"flushing turn {mid}")


def from_log(events: list[StreamEvent]) -> tuple[str, list[dict[str, Any]], bool]:
    """(answer text, references, ended) as a turn's log holds them: what its followers saw."""
    answer = "".join(e.content for e in events if e.type == "answer")
    refs: list[dict[str, Any]] = []
    for e in events:
        if e.type == "references":
            refs = list(e.data.get("references") or [])
    return answer, refs, any(e.type in ("complete", "stop") for e in events)


async def close_abandoned(message: Message, stream_log: StreamLog, messages: MessageRepo,
                      append: Append) -> None:
    """Saves what the turn's log holds (the text its followers saw; on a memory log after a restart,
    nothing: the message keeps what the database has) flagged as interrupted, and ends the log with an
    error and ``complete`` so its followers stop waiting."""
    sid, mid = message.session_id, message.id
    try:
        events = await stream_log.read(sid, mid)
    except Exception:
        log.warning("log of abandoned turn %s not read", mid, exc_info=True)
        events = []
    answer, refs, ended = from_log(events)
    debug = {**(message.debug or {}), "stopped": "interrupted"}
    if not ended:
        debug["truncated"] = True
    fields: dict[str, Any] = {"is_completed": True, "debug": debug}
    if answer or ended:
        fields["content"] = answer
    if refs:
        fields["knowledge_references"] = refs
    await messages.complete(mid, fields)
    if events and not ended:
        now = time.time_ns()
        await append(sid, mid, [
            stream_event("error", INTERRUPTED, True, {"stage": "stream", "error": INTERRUPTED},
                         f"error-{now}"),
            stream_event("complete", "", True, {"total_steps": 0, "total_duration_ms": 0},
                         f"complete-{now}")])
    log.info("closed interrupted turn %s (%d characters from its log)", mid, len(answer))


async def end_orphan(message: Message, stream_log: StreamLog, messages: MessageRepo) -> None:
    """No process ended the turn after a stop: rebuild the partial answer from the log and end it here."""
    events = await stream_log.read(message.session_id, message.id)
    answer, refs, _ = from_log(events)
    await messages.update_fields(message.id, content=answer, knowledge_references=refs, is_completed=True,
                                 debug={"stopped": "orphaned"})
    await stream_log.append(message.session_id, message.id, StreamEvent(
        id=f"stop-{time.time_ns()}", type="stop", done=True,
        data={"session_id": message.session_id, "message_id": message.id, "reason": "user_requested"}))
