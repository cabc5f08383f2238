"""The ReAct loop (spec §6.4): one model call per round, tools through the registry, natural stop = answer.

The engine depends on the ``ChatModel`` port, the ``ToolRegistry`` and the turn's reference registry only; it
never learns a concrete tool. Guards: iteration cap, empty-answer nudges, repeated-answer and repeated-call
detection, transient-error retries, synthesis of a final answer when the loop cannot finish on its own.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from knora.domain.common import rfc3339
from knora.domain.search import SearchResult
from knora.domain.stream import BusEvent
from knora.ports.chat import ChatMessage, ChatModel, ChatOptions, ToolCall
from knora.ports.tool import ToolContext, ToolResult
from knora.ports.turn import EventBus, ReferenceRegistryPort
from knora.services.agent import arguments, context, prompts, react_text
from knora.services.agent.config import EngineConfig
from knora.services.agent.registry import ERROR_HINT, ToolRegistry
from knora.services.agent.rendering import KNOWLEDGE_MODES, model_output, row_to_result
from knora.services.agent.think import RoundResult, event_id, stream_answer, stream_with_retry

log = logging.getLogger(__name__)
NATURAL_STOPS = frozenset({"stop", "end_turn", "stop_sequence"})


@dataclass
class EngineResult:
    answer: str = ""
    steps: list[dict[str, Any]] = field(default_factory=list)
    references: list[SearchResult] = field(default_factory=list)
    is_fallback: bool = False
    error: str = ""
    rounds: int = 0
    stop_reason: str = ""


@dataclass
class _Run:
    messages: list[ChatMessage]
    result: EngineResult = field(default_factory=EngineResult)
    seen_calls: dict[str, int] = field(default_factory=dict)
    duplicate_rounds: int = 0
    empty_retries: int = 0
    last_text: str = ""
    repeated_text: int = 0
    refs_by_id: dict[str, SearchResult] = field(default_factory=dict)


class AgentEngine:
    def __init__(self, model: ChatModel, registry: ToolRegistry, config: EngineConfig, *, bus: EventBus,
                 references: ReferenceRegistryPort, tool_context: ToolContext,
                 cancelled: asyncio.Event | None = None) -> None:
        self.model, self.registry, self.config = model, registry, config
        self.bus, self.refs, self.tool_ctx = bus, references, tool_context
        self.cancelled = cancelled or asyncio.Event()
        self.text_mode = (config.text_protocol if config.text_protocol is not None
                          else not model.supports_tools)

    # -- public ---------------------------------------------------------------------------------------------
    async def run(self, system: str, history: list[ChatMessage], user_turn: str, query: str,
                  *, seed_calls: list[ToolCall] | None = None) -> EngineResult:
        """``seed_calls`` run before the first model call (text protocol only): a model that cannot call tools
        then starts from an observation — e.g. a knowledge search for the question — instead of nothing."""
        if self.text_mode and len(self.registry):
            system = f"{system}\n\n{react_text.protocol_prompt(self.registry.definitions())}"
        run = _Run(messages=[ChatMessage(role="system", content=system), *history,
                             ChatMessage(role="user", content=user_turn)])
        try:
            seeds = [c for c in seed_calls or [] if c.name in self.registry] if self.text_mode else []
            if seeds:
                step: dict[str, Any] = {"iteration": 0, "thought": "", "reasoning_content": "",
                                        "tool_calls": [],
                                        "timestamp": rfc3339(datetime.now(UTC))}
                await self._act(run, RoundResult(tool_calls=seeds), step)
                run.result.rounds = 1
            await self._loop(run, query)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.warning("agent run failed", exc_info=True)
            run.result.error = str(exc)
            await self.bus.emit(BusEvent.ERROR, {"error": str(exc), "stage": "agent_execution"})
        finally:
            await self.registry.cleanup()
        run.result.references = list(run.refs_by_id.values())
        return run.result

    # -- loop -----------------------------------------------------------------------------------------------
    async def _loop(self, run: _Run, query: str) -> None:
        res = run.result
        while res.rounds < self.config.max_iterations:
            if self.cancelled.is_set():
                res.stop_reason = "cancelled"
                return
            outcome = await self._round(run, query)
            if outcome == "break":
                return
            if outcome == "next":
                res.rounds += 1
        if not self.cancelled.is_set():
            res.stop_reason = "max_iterations"
            await self._reflect(f"Reached the limit of {self.config.max_iterations} rounds; "
                                "answering from what was found.")
            await self._synthesise(run, query, prompts.MAX_ITERATIONS_FALLBACK)

    async def _round(self, run: _Run, query: str) -> str:
        cfg, res = self.config, run.result
        messages = context.trim_current_turn_tool_results(run.messages, cfg.max_context_tokens)
        messages = await context.consolidate(messages, cfg.max_context_tokens, self.model)
        messages = context.compress(messages, cfg.max_context_tokens)
        options = ChatOptions(temperature=cfg.temperature, thinking=cfg.thinking,
                              tools=[] if self.text_mode else self.registry.definitions(),
                              max_tokens=cfg.max_completion_tokens)
        try:
            rr = await stream_with_retry(self.model, context.sanitize(messages), options, self.bus,
                                         res.rounds,
                                         live_answer=not self.text_mode, cancelled=self.cancelled,
                                         timeout=cfg.llm_call_timeout, retry_delays=cfg.retry_delays)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            failure = f"LLM call failed ({self.model.model_id}): {exc}"  # which model: the turn names it
            if any(step["tool_calls"] for step in res.steps):
                await self._synthesise(run, query, failure)
                return "break"
            raise RuntimeError(failure) from exc
        thought = rr.content
        if self.text_mode:
            thought, rr.tool_calls, final = react_text.parse(rr.content, res.rounds)
            if final is not None:
                rr.content = final
        step: dict[str, Any] = {"iteration": res.rounds, "thought": thought,
                                "reasoning_content": rr.reasoning,
                                "tool_calls": [], "timestamp": rfc3339(datetime.now(UTC))}
        if self.cancelled.is_set():
            if thought or rr.tool_calls:
                res.steps.append(step)
            res.stop_reason = "cancelled"
            return "break"
        if not rr.tool_calls:
            return await self._answer(run, rr, step)
        await self._act(run, rr, step)
        return "break" if res.stop_reason == "duplicate_calls" else "next"

    async def _answer(self, run: _Run, rr: RoundResult, step: dict[str, Any]) -> str:
        res = run.result
        if rr.finish_reason == "content_filter":
            await self._emit_answer(rr.content or prompts.CONTENT_FILTER_ANSWER, None)
            res.answer, res.stop_reason = rr.content or prompts.CONTENT_FILTER_ANSWER, "content_filter"
            step["thought"] = ""
            res.steps.append(step)
            return "break"
        if rr.finish_reason not in NATURAL_STOPS:
            # e.g. "length" without tools: loop again with the truncated text, unless it keeps repeating
            run.repeated_text = run.repeated_text + 1 if rr.content and rr.content == run.last_text else 0
            run.last_text = rr.content
            if run.repeated_text >= 2:
                res.answer, res.stop_reason = rr.content, "repeated_answer"
                res.steps.append(step)
                return "break"
            run.messages.append(ChatMessage(role="assistant", content=rr.content))
            res.steps.append(step)
            return "next"
        if not rr.content.strip():
            if run.empty_retries < 2:
                run.empty_retries += 1
                run.messages.append(ChatMessage(role="user", content=prompts.EMPTY_ANSWER_NUDGE))
                return "continue"
            res.answer, res.is_fallback, res.stop_reason = prompts.EMPTY_ANSWER_FALLBACK, True, "empty_answer"
            await self._emit_answer(res.answer, None, is_fallback=True)
            return "break"
        await self._emit_answer(rr.content, rr.answer_event_id if rr.answer_streamed else None)
        res.answer, res.stop_reason = rr.content, "natural_stop"
        step["thought"] = ""  # the final round's text is the answer, not a thought
        res.steps.append(step)
        return "break"

    async def _emit_answer(self, text: str, streamed_id: str | None, *, is_fallback: bool = False) -> None:
        """Close an answer streamed live with a done marker, or emit an unstreamed one whole."""
        eid = streamed_id or event_id("answer")
        if streamed_id is None and text:
            await self.bus.emit(BusEvent.FINAL_ANSWER, {"content": text, "done": False, "event_id": eid,
                                                        "is_fallback": is_fallback}, event_id=eid)
        await self.bus.emit(BusEvent.FINAL_ANSWER, {"content": "", "done": True, "event_id": eid,
                                                    "is_fallback": is_fallback}, event_id=eid)

    # -- act ------------------------------------------------------------------------------------------------
    async def _act(self, run: _Run, rr: RoundResult, step: dict[str, Any]) -> None:
        calls = [tc.model_copy(update={"id": arguments.normalize_call_id(tc.id, tc.name, i)})
                 for i, tc in enumerate(rr.tool_calls)]
        prepared = [self._prepare(run, c) for c in calls]
        if self.config.parallel_tool_calls and len(calls) >= 2:
            records = list(await asyncio.gather(*(self._call(run, c, p, step["iteration"])
                                                  for c, p in zip(calls, prepared, strict=True))))
        else:
            records = [await self._call(run, c, p, step["iteration"]) for c, p in zip(calls, prepared,
                                                                                      strict=True)]
        step["tool_calls"] = [r[0] for r in records]
        run.result.steps.append(step)
        assistant_calls = [ToolCall(id=c.id, name=c.name, arguments=_replay_arguments(c, p))
                           for c, p in zip(calls, prepared, strict=True)]
        if self.text_mode:
            run.messages.append(ChatMessage(role="assistant", content=rr.content))
            run.messages.append(ChatMessage(role="user", content=react_text.observation(
                [(c.name, r[1]) for c, r in zip(calls, records, strict=True)])))
        else:
            run.messages.append(ChatMessage(role="assistant", content=step["thought"],
                                            reasoning_content=rr.reasoning, tool_calls=assistant_calls))
            for c, r in zip(calls, records, strict=True):
                run.messages.append(ChatMessage(role="tool", content=r[1], tool_call_id=c.id, name=c.name))
        duplicates = [p for p in prepared if isinstance(p, ToolResult) and p.data.get("duplicate")]
        run.duplicate_rounds = run.duplicate_rounds + 1 if len(duplicates) == len(prepared) else 0
        if run.duplicate_rounds >= self.config.duplicate_rounds_limit:
            run.result.stop_reason = "duplicate_calls"
            await self._reflect("The model kept repeating identical tool calls; "
                                "answering from what was found.")
            await self._synthesise(run, "", prompts.MAX_ITERATIONS_FALLBACK,
                                   reason="repeated identical tool calls")

    def _prepare(self, run: _Run, call: ToolCall) -> tuple[dict[str, Any], dict[str, Any]] | ToolResult:
        """→ (arguments for the tool, arguments as the model wrote them), or a failure that skips
        execution.

        A call is counted before it is validated: a call the engine refuses (unparsable arguments, unresolved
        handles) repeated with the same name and arguments is a duplicate like any other, so the repeated-call
        guard stops the run. Counting only valid calls let a model repeat one invalid call for every
        iteration (issue 20, item 9: 51 model calls)."""
        tool = self.registry.get(call.name)
        opaque = bool(getattr(tool, "opaque_arguments", False))
        raw = call.arguments if opaque else self.refs.decode_arguments(call.arguments)
        try:
            args = arguments.parse_arguments(raw)
        except ValueError as exc:
            if _seen_before(run, f"{call.name}:unparsed:{call.arguments}"):
                return _duplicate(call)
            return ToolResult.fail(f"Failed to parse tool arguments: {exc}{ERROR_HINT}", _raw=call.arguments)
        if _seen_before(run, arguments.signature(call.name, args)):
            return _duplicate(call)
        try:
            model_args = arguments.parse_arguments(call.arguments) if raw != call.arguments else args
        except ValueError:
            model_args = args
        unresolved = [] if opaque else arguments.unresolved_handles(args)
        if unresolved:
            return ToolResult.fail("tool arguments contain unresolved model handles: "
                                   f"{unresolved}{ERROR_HINT}")
        return args, model_args

    async def _call(self, run: _Run, call: ToolCall, prepared: tuple[dict[str, Any], dict[str,
                                                                                          Any]] | ToolResult,
                    iteration: int) -> tuple[dict[str, Any], str]:
        args = prepared[0] if isinstance(prepared, tuple) else {}
        shown = prepared[1] if isinstance(prepared, tuple) else {}
        await self.bus.emit(BusEvent.TOOL_CALL, {"tool_call_id": call.id, "tool_name": call.name,
                                                 "arguments": args or shown, "iteration": iteration,
                                                 "hint": call.name}, event_id=f"{call.id}-tool-hint")
        started = time.perf_counter()
        if isinstance(prepared, ToolResult):
            result = prepared
        else:
            ctx = _with(self.tool_ctx, tool_call_id=call.id)
            result = await self.registry.execute(call.name, args, ctx)
        duration_ms = int((time.perf_counter() - started) * 1000)
        rendered = model_output(result, self.refs)
        if self._collect_references(run, result):
            await self.bus.emit(BusEvent.REFERENCES, {"references": [r.model_dump(mode="json")
                                                                     for r in run.refs_by_id.values()],
                                                      "iteration": iteration})
        data = _client_data(result.data)
        await self.bus.emit(BusEvent.TOOL_RESULT, {
            "tool_call_id": call.id, "tool_name": call.name, "success": result.success,
            "output": result.output,
            "error": result.error, "duration_ms": duration_ms, "iteration": iteration, "data": data,
            "content": _summary(result)},
            event_id=f"{call.id}-tool-result")
        record = {"id": call.id, "name": call.name, "args": args or shown,
                  "result": {"success": result.success, "output": result.output, "data": data,
                             "error": result.error},
                  "duration": duration_ms}
        return record, rendered

    def _collect_references(self, run: _Run, result: ToolResult) -> bool:
        """Knowledge rows of successful results accumulate into the turn's references; chosen by display type,
        never by tool name. True when something new arrived (REFERENCES then re-sends the whole list)."""
        if not result.success or result.data.get("display_type") not in KNOWLEDGE_MODES:
            return False
        added = False
        for row in result.data.get("results") or []:
            full = row.get("reference")
            ref = SearchResult.model_validate(full) if isinstance(full, dict) else row_to_result(row)
            if ref.id and ref.id not in run.refs_by_id:
                run.refs_by_id[ref.id] = ref
                added = True
        return added

    async def _reflect(self, text: str) -> None:
        """A guard fired: say so on the stream (WeKnora declares REFLECTION but never emits it)."""
        eid = event_id("reflection")
        await self.bus.emit(BusEvent.REFLECTION, {"content": text, "done": True, "event_id": eid},
                            event_id=eid)

    # -- synthesis ------------------------------------------------------------------------------------------
    async def _synthesise(self, run: _Run, query: str, failure: str, *, reason: str = "") -> None:
        """Spec §6.4.3: answer from what the tools returned, without tools; failure text if that fails too."""
        res = run.result
        user = next((m for m in reversed(run.messages) if m.role == "user"), None)
        msgs = [run.messages[0]] + ([user] if user else [])
        for s in res.steps:
            for tc in s["tool_calls"]:
                text = (tc["result"]["output"] if tc["result"]["success"]
                        else f"Error: {tc['result']['error']}")
                msgs.append(ChatMessage(role="user",
                                        content=f"Tool {tc['name']} returned: {self.refs.encode_text(text)}"))
        msgs.append(ChatMessage(role="user", content=prompts.SYNTHESIS.format(
            query=query or (user.content if user else ""))))
        try:
            answer = await stream_answer(self.model, msgs,
                                         ChatOptions(temperature=self.config.temperature),
                                         self.bus, timeout=self.config.llm_call_timeout)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001
            log.warning("final-answer synthesis failed: %s", exc)
            answer = ""
        if not answer:
            res.is_fallback = True
            answer = failure if not failure.startswith("LLM call failed") else prompts.MAX_ITERATIONS_FALLBACK
            await self._emit_answer(answer, None, is_fallback=True)
        res.answer = answer
        if reason:
            res.stop_reason = res.stop_reason or reason



def _seen_before(run: _Run, signature: str) -> bool:
    """Counts one call under ``signature``; True from its second occurrence in the run."""
    run.seen_calls[signature] = run.seen_calls.get(signature, 0) + 1
    return run.seen_calls[signature] > 1


def _duplicate(call: ToolCall) -> ToolResult:
    return ToolResult(success=False, error=prompts.DUPLICATE_CALL.format(name=call.name),
                      data={"duplicate": True})


def _replay_arguments(call: ToolCall, prepared: tuple[dict[str, Any], dict[str, Any]] | ToolResult) -> str:
    """Arguments replayed to the model as it wrote them (handles, never the decoded durable ids), as valid
    JSON."""
    if isinstance(prepared, tuple):
        return json.dumps(prepared[1], ensure_ascii=False)
    try:
        return json.dumps(arguments.parse_arguments(call.arguments), ensure_ascii=False)
    except ValueError:
        return "{}"


def _summary(result: ToolResult) -> str:
    """The short text of a tool card (WeKnora's ``StreamContentForToolResult``): only for display types."""
    if not result.success or not result.data.get("display_type"):
        return ""
    rows = result.data.get("results")
    return f"检索到 {len(rows)} 条相关内容" if isinstance(rows, list) else ""


def _client_data(data: dict[str, Any]) -> dict[str, Any]:
    """What the stream and the stored steps keep of a result's data: no engine markers, and knowledge rows
    without their full SearchResult copy (that travels once, in the REFERENCES event)."""
    out = {k: v for k, v in data.items() if k not in ("duplicate", "_raw", "model_note")}
    rows = out.get("results")
    if isinstance(rows, list) and rows and isinstance(rows[0], dict) and "reference" in rows[0]:
        out["results"] = [{k: v for k, v in r.items() if k != "reference"} for r in rows]
    return out


def _with(ctx: ToolContext, **changes: Any) -> ToolContext:
    return replace(ctx, **changes)
