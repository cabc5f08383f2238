"""``chat_completion`` and ``chat_completion_stream`` (spec §2.17).

Messages: system (prompt + image requirement + the registry's protocol prompt) + history pairs (public
citations compacted back into this turn's handles) + the user message; every text encoded through the
registry so durable ids never reach the model.

Streaming: reasoning deltas go out as THOUGHT (one ``…-thinking`` span, closed when the answer starts or the
stream ends), answer deltas as FINAL_ANSWER with the model's raw ``<ref id="cN"/>`` marks (the streaming
handler expands them and holds back partial tags). The first ``done`` answer ends the answer; duplicates are
ignored. On user stop no ``done`` answer is sent (spec §2.17: the stop path finalises the message). Unlike
WeKnora, the stage returns only when the stream has ended, so the runner's outcome carries the whole answer.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence

from knora import prompts
from knora.domain.stream import BusEvent
from knora.ports.chat import ChatMessage, ChatModel, ChatOptions, ModelError, close_stream
from knora.ports.turn import TurnContext
from knora.services.pipeline.deps import PipelineDeps
from knora.services.pipeline.errors import ERR_GET_CHAT_MODEL, ERR_MODEL_CALL, PluginError
from knora.services.pipeline.framework import Next
from knora.services.pipeline.plugins.into_chat_message import IMAGE_SUFFIX
from knora.services.pipeline.state import ChatManage, EventType

log = logging.getLogger(__name__)


def uuid8() -> str:
    return uuid.uuid4().hex[:8]


def build_messages(cm: ChatManage, ctx: TurnContext) -> list[ChatMessage]:
    req, st = cm.request, cm.state
    system = st.system_prompt or prompts.render(st.system_prompt_override or req.summary.prompt,
                                                {"query": req.query, "contexts": "",
                                                 "language": req.language})
    system = (system.rstrip() + "\n\n" + ctx.references.protocol_prompt()).strip()
    refs = ctx.references
    messages = [ChatMessage(role="system", content=refs.encode_text(system))]
    for turn in st.history:
        messages.append(ChatMessage(role="user", content=refs.encode_text(turn.query)))
        messages.append(ChatMessage(role="assistant",
                                    content=refs.encode_text(refs.compact_public_citations(turn.answer))))
    content = st.user_content or req.query
    if st.image_description and not req.chat_model_supports_vision and IMAGE_SUFFIX not in content:
        content += IMAGE_SUFFIX + st.image_description  # pure chat: no into_chat_message stage added it
    messages.append(ChatMessage(role="user", content=refs.encode_text(content)))
    return messages


def options_for(cm: ChatManage) -> ChatOptions:
    req = cm.request
    return ChatOptions(temperature=req.summary.temperature, max_tokens=req.summary.max_completion_tokens,
                       thinking=req.summary.thinking,
                       extra={"passages": cm.state.passages, "query": req.query, "purpose": "knowledge_qa"})


async def load_chat_model(deps: PipelineDeps, cm: ChatManage) -> ChatModel | PluginError:
    try:
        model = await cm.chat_model(deps.chat_models, cm.request.chat_model_id)
    except Exception as exc:  # noqa: BLE001 - spec: ErrGetChatModel
        return ERR_GET_CHAT_MODEL.with_error(exc)
    cm.state.model_id = model.model_id
    return model


class ChatCompletion:
    """Non-streaming completion (the ``rag`` preset / evaluation)."""

    def __init__(self, deps: PipelineDeps) -> None:
        self._deps = deps

    def activation_events(self) -> Sequence[EventType]:
        return (EventType.CHAT_COMPLETION,)

    async def on_event(self, ctx: TurnContext, event_type: EventType, cm: ChatManage,
                       next: Next) -> PluginError | None:
        model = await load_chat_model(self._deps, cm)
        if isinstance(model, PluginError):
            return model
        try:
            resp = await model.chat(build_messages(cm, ctx), options_for(cm))
        except ModelError as exc:
            return ERR_MODEL_CALL.with_error(f"{model.model_id}: {exc}")  # which model: the turn names it
        ctx.add_usage(resp.usage)
        cm.state.chat_response = resp.content
        cm.state.reasoning = resp.reasoning_content
        return await next()


class ChatCompletionStream:
    def __init__(self, deps: PipelineDeps) -> None:
        self._deps = deps

    def activation_events(self) -> Sequence[EventType]:
        return (EventType.CHAT_COMPLETION_STREAM,)

    async def on_event(self, ctx: TurnContext, event_type: EventType, cm: ChatManage,
                       next: Next) -> PluginError | None:
        model = await load_chat_model(self._deps, cm)
        if isinstance(model, PluginError):
            return model
        base = uuid8()
        thinking_id, answer_id = f"{base}-thinking", f"{base}-answer"
        thinking_open = False
        answer_done = False
        answer: list[str] = []
        reasoning: list[str] = []
        started = False

        async def close_thinking() -> None:
            nonlocal thinking_open
            if thinking_open:
                thinking_open = False
                await ctx.bus.emit(BusEvent.THOUGHT, {"content": "", "done": True, "event_id": thinking_id},
                                   event_id=thinking_id)

        if cm.state.image_note:  # the user's images were not described: the answer says so first
            lead = f"_{cm.state.image_note}_\n\n"
            answer.append(lead)
            await ctx.bus.emit(BusEvent.FINAL_ANSWER, {"content": lead, "done": False, "event_id": answer_id},
                               event_id=answer_id)
        stream = model.stream(build_messages(cm, ctx), options_for(cm))
        try:
            async for chunk in stream:
                started = True
                ctx.add_usage(chunk.usage)
                if ctx.cancelled.is_set():
                    break
                if chunk.reasoning_content:
                    thinking_open = True
                    reasoning.append(chunk.reasoning_content)
                    await ctx.bus.emit(BusEvent.THOUGHT, {"content": chunk.reasoning_content, "done": False,
                                                          "event_id": thinking_id}, event_id=thinking_id)
                done = chunk.finish_reason is not None
                if answer_done or not (chunk.content or done):
                    continue  # duplicate completion (finish reason + EOF sentinel) or a reasoning-only chunk
                await close_thinking()
                answer.append(chunk.content)
                answer_done = done
                await ctx.bus.emit(BusEvent.FINAL_ANSWER, {"content": chunk.content, "done": done,
                                                           "event_id": answer_id}, event_id=answer_id)
        except ModelError as exc:
            if not started:
                return ERR_MODEL_CALL.with_error(f"{model.model_id}: {exc}")  # which model: the turn names it
            log.warning("answer stream failed mid-way: %s", exc)
            await ctx.bus.emit(BusEvent.ERROR, {"error": str(exc), "stage": "chat_completion_stream"},
                               event_id=f"{uuid8()}-error")
        finally:  # a stop (break or cancellation) or a failure closes the model request now
            await close_stream(stream)
        await close_thinking()
        cm.state.chat_response = "".join(answer)
        cm.state.reasoning = "".join(reasoning)
        return await next()
