"""The user's images in smart-reasoning mode (spec §5.10 ``runVLMAnalysisIfNeeded``, §5.11 step 10): the
agent's VLM (``vlm_model_id``) describes them before the loop, one call per image with the question, and the
descriptions are added to the agent's query (``[用户上传图片内容]``). The step shows as WeKnora's
``image_analysis`` progress call. Without a VLM, or when it fails, the step says the images were not
described and the query tells the agent so, so its answer can say it."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid

from knora.domain.stream import BusEvent
from knora.ports.chat import ChatMessage, ChatModels, ChatOptions
from knora.ports.turn import TurnContext, TurnRequest

log = logging.getLogger(__name__)

IMAGE_SUFFIX = "\n\n[用户上传图片内容]\n"
PROMPT = ("The user's question is: {query}\n\nDescribe what in this image is relevant to the question, "
          "including any text, numbers or labels it shows. Answer briefly, with the description only.")
NOT_DESCRIBED = ("Note: the {n} attached image(s) were not described ({reason}); the answer is based on the "
                 "text of the question only.")


async def describe_for_agent(chat_models: ChatModels, req: TurnRequest, ctx: TurnContext,
                             vlm_model_id: str) -> str:
    """The text to add to the agent's query for the request's images ("" when there are none)."""
    if not req.images:
        return ""
    call_id = f"ragpipe-{uuid.uuid4()}"
    await ctx.bus.emit(BusEvent.TOOL_CALL, {"tool_call_id": call_id, "tool_name": "image_analysis",
                                            "arguments": {"count": len(req.images)}}, event_id=call_id)
    started = time.perf_counter()
    descriptions: list[str] = []
    reason = "no vision model (VLM) is configured for this agent"
    if vlm_model_id:
        try:
            model = await chat_models.get(vlm_model_id, tenant_id=req.resource_tenant_id)
            opts = ChatOptions(temperature=0.1, max_tokens=500, thinking=False,
                               extra={"purpose": "image_analysis"})
            answers = await asyncio.gather(*(model.chat(
                [ChatMessage(role="user", content=PROMPT.format(query=req.query), images=[url])], opts)
                for url in req.images))
            descriptions = [a.content.strip() for a in answers if a.content.strip()]
            reason = "the vision model said nothing"
        except Exception as exc:  # noqa: BLE001 - the question is still answered, from its text
            log.warning("image analysis failed: %s", exc)
            reason = f"the vision model failed: {str(exc)[:200]}"
    note = "" if descriptions else NOT_DESCRIBED.format(n=len(req.images), reason=reason)
    await ctx.bus.emit(BusEvent.TOOL_RESULT, {
        "tool_call_id": call_id, "tool_name": "image_analysis", "success": True,  # the note says the rest
        "output": note or "已查看图片内容", "error": "",
        "duration_ms": int((time.perf_counter() - started) * 1000),
        "data": {"image_note": note} if note else {}}, event_id=call_id)
    if note:
        return "\n\n(" + note + " Tell the user so.)"
    return IMAGE_SUFFIX + "\n".join(descriptions)
