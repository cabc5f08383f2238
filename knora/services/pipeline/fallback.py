"""What the user gets when retrieval found nothing usable (spec §1.11): ``fixed`` text or a ``model`` answer.

The model strategy lists the KB's documents so the model can point at a related one, answers from general
knowledge labelled as such, and falls back to the fixed text whenever anything about it fails.
"""

from __future__ import annotations

import logging
import re

from knora import prompts
from knora.domain.stream import BusEvent
from knora.ports.chat import ChatMessage, ChatOptions, close_stream
from knora.services.pipeline.deps import PipelineDeps
from knora.services.pipeline.plugins.chat_completion import uuid8
from knora.services.pipeline.state import ChatManage

log = logging.getLogger(__name__)

MAX_DOCUMENTS = 50
_TAGS = re.compile(r"(?is)<(?:ref|kb|web)(?:\s[^>]*)?/?>")


async def fixed_fallback(cm: ChatManage) -> None:
    text = cm.request.fallback_response
    if not cm.request.citations_enabled:
        text = _TAGS.sub("", text)
    cm.state.chat_response = text
    cm.state.is_fallback = True
    event_id = f"{uuid8()}-fallback"
    await cm.ctx.bus.emit(BusEvent.FINAL_ANSWER, {"content": text, "done": True, "is_fallback": True,
                                                  "event_id": event_id}, event_id=event_id)


async def kb_document_listing(deps: PipelineDeps, cm: ChatManage) -> str:
    if deps.list_documents is None:
        return ""
    kb_ids = list(dict.fromkeys([*(t.knowledge_base_id for t in cm.request.search_targets),
                                 *cm.request.knowledge_base_ids]))
    lines: list[str] = []
    for kb_id in kb_ids:
        for k in await deps.list_documents(cm.request.tenant_id, kb_id, MAX_DOCUMENTS + 1):
            if k.enable_status != "enabled" or not (k.title or k.file_name):
                continue
            if len(lines) >= MAX_DOCUMENTS:
                return "".join(lines) + f"... (showing first {MAX_DOCUMENTS} documents)\n"
            line = f"- {k.title or k.file_name}" + (f" ({k.file_type})" if k.file_type else "")
            if k.description:
                desc = k.description if len(k.description) <= 100 else k.description[:100] + "..."
                line += f": {desc}"
            lines.append(line + "\n")
    return "".join(lines)


async def model_fallback(deps: PipelineDeps, cm: ChatManage) -> None:
    req, st = cm.request, cm.state
    if not req.fallback_prompt.strip():
        return await fixed_fallback(cm)
    try:
        model = await cm.chat_model(deps.chat_models, req.chat_model_id)
    except Exception as exc:  # noqa: BLE001 - spec: any failure → fixed
        log.warning("fallback model unavailable: %s", exc)
        return await fixed_fallback(cm)
    if not getattr(model, "generative", True):
        return await fixed_fallback(cm)  # an extractive answerer has nothing to say without passages
    query = st.rewrite_query.strip() or req.query
    try:
        docs = await kb_document_listing(deps, cm)
    except Exception as exc:  # noqa: BLE001
        log.info("kb document listing failed: %s", exc)
        docs = ""
    system = prompts.render(req.fallback_prompt, {"query": query, "language": req.language,
                                                  "kb_documents": docs})
    if st.image_description and not req.chat_model_supports_vision:
        system += "\n\n[用户上传图片内容]\n" + st.image_description
    if st.quoted_context:
        system += "\n\n" + st.quoted_context
    refs = cm.ctx.references
    messages = [ChatMessage(role="system", content=refs.encode_text(system.rstrip() + "\n\n" +
                                                                   refs.protocol_prompt()))]
    for turn in st.history:
        messages += [ChatMessage(role="user", content=turn.query),
                     ChatMessage(role="assistant", content=refs.compact_public_citations(turn.answer))]
    messages.append(ChatMessage(role="user", content=query))
    opts = ChatOptions(temperature=req.summary.temperature, max_tokens=req.summary.max_completion_tokens,
                       thinking=False, extra={"purpose": "fallback"})
    event_id = f"{uuid8()}-fallback"
    parts: list[str] = []
    stream = model.stream(messages, opts)
    try:
        async for chunk in stream:
            if cm.cancelled:
                return None
            done = chunk.finish_reason is not None
            if chunk.content or done:
                parts.append(chunk.content)
                await cm.ctx.bus.emit(BusEvent.FINAL_ANSWER, {"content": chunk.content, "done": done,
                                                              "is_fallback": True, "event_id": event_id},
                                      event_id=event_id)
            if done:
                st.chat_response = "".join(parts)
                st.is_fallback = True
                st.model_id = model.model_id
                return None
    except Exception as exc:  # noqa: BLE001 - spec: stream errors → fixed text
        log.warning("fallback stream failed: %s", exc)
        if parts:
            await cm.ctx.bus.emit(BusEvent.FINAL_ANSWER, {"content": "", "done": True, "is_fallback": True,
                                                          "event_id": event_id}, event_id=event_id)
            st.chat_response, st.is_fallback = "".join(parts), True
            return None
    finally:  # a stop, the end or a failure closes the model request now, not at garbage collection
        await close_stream(stream)
    return await fixed_fallback(cm)


async def handle_fallback(deps: PipelineDeps, cm: ChatManage) -> None:
    if cm.request.fallback_strategy == "model":
        await model_fallback(deps, cm)
    else:
        await fixed_fallback(cm)
