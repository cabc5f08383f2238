"""``query_understand`` (spec §2.3): one model call for rewrite + intent + image description.

The model is asked for one JSON object; parsing is tolerant (whole text, then first ``{`` … last ``}``, alias
keys). Where WeKnora throws a plain-text answer away, Knora keeps it as the rewrite when it looks like a query
(one short line) — the selectable plain-rewrite prompts would otherwise never change anything (departure D2).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from knora import prompts
from knora.domain.model_json import extract_object
from knora.ports.chat import ChatMessage, ChatModel, ChatOptions
from knora.ports.turn import HistoryTurn, TurnContext
from knora.services.pipeline.deps import PipelineDeps
from knora.services.pipeline.errors import PluginError
from knora.services.pipeline.framework import Next
from knora.services.pipeline.state import ChatManage, EventType

log = logging.getLogger(__name__)

NO_VLM_NOTE = ("Note: the {n} attached image(s) were not described — no vision model (VLM) is configured, so "
               "the answer is based on the text of the question only.")
IMAGE_FAILED_NOTE = ("Note: the {n} attached image(s) could not be described ({reason}); the answer is "
                     "based on the text of the question only.")
IMAGE_QUERY_CHARS = 500  # of an image description added to the search query

_REWRITE_KEYS = ("rewrite_query", "rewritten_query", "query", "question")
_DESC_KEYS = ("image_description", "image_desc", "image_text", "image_ocr_text", "description")
_OCR_KEYS = ("ocr_text", "ocr", "full_ocr", "image_ocr", "ocr_content")


@dataclass
class Understanding:
    rewrite: str = ""
    intent: str = ""
    image_description: str = ""
    parsed: bool = False  # False: nothing usable came back


def _first_string(obj: dict[str, Any], keys: Sequence[str]) -> str:
    for key in keys:
        value = obj.get(key)
        if isinstance(value, str):
            return value
    return ""


def looks_like_query(text: str, original: str) -> bool:
    """A plain-text reply usable as a rewrite: one line, not a refusal-length essay, no JSON debris."""
    t = text.strip().strip('"').strip()
    return bool(t) and "\n" not in t and "{" not in t and len(t) <= max(200, 3 * len(original))


def parse_understanding(text: str, original_query: str = "") -> Understanding:
    raw = text.strip()
    if not raw:
        return Understanding()
    obj = extract_object(raw)
    if obj is None:
        if looks_like_query(raw, original_query):
            return Understanding(rewrite=raw.strip().strip('"').strip(), parsed=True)
        return Understanding(parsed=True)
    desc = _first_string(obj, _DESC_KEYS).strip()
    ocr = _first_string(obj, _OCR_KEYS).strip()
    if desc and ocr and ocr not in desc:
        desc = f"{desc}\n\n[OCR]\n{ocr}"
    elif not desc:
        desc = ocr
    return Understanding(rewrite=_first_string(obj, _REWRITE_KEYS).strip(),
                         intent=_first_string(obj, ("intent",)).strip(), image_description=desc, parsed=True)


def render_conversation(history: Sequence[HistoryTurn]) -> str:
    return "".join(f"------BEGIN------\nUser question: {h.query}\nAssistant answer: {h.answer}\n"
                   "------END------\n" for h in history)


def intent_prompts() -> dict[str, str]:
    return {str(t["id"]): str(t.get("content", "")) for t in prompts.templates_in("intent_prompts.yaml")}


class QueryUnderstand:
    def __init__(self, deps: PipelineDeps) -> None:
        self._deps = deps

    def activation_events(self) -> Sequence[EventType]:
        return (EventType.QUERY_UNDERSTAND,)

    async def on_event(self, ctx: TurnContext, event_type: EventType, cm: ChatManage,
                       next: Next) -> PluginError | None:
        req, st = cm.request, cm.state
        st.rewrite_query = req.query
        if not req.enable_rewrite and not req.images:
            return await next()
        model, vision = await self._model(cm)
        if model is None:
            return await next()  # the extractive answerer cannot rewrite; keep the query as typed
        system = prompts.render(req.rewrite_prompt_system or prompts.content("default_rewrite"),
                                {"language": req.language, "conversation": render_conversation(st.history)})
        query = req.query + (f'\n\n<images_uploaded count="{len(req.images)}" />' if req.images
                             else "\n\n<no_image_attached />") + "\n<no_document_attached />"
        user = prompts.render(req.rewrite_prompt_user or prompts.user_content("default_rewrite"),
                              {"query": query, "language": req.language})
        opts = ChatOptions(temperature=0.3, max_tokens=500 if req.images else 150, thinking=False,
                           extra={"purpose": "query_rewrite"})
        images = list(req.images) if vision else []
        try:
            resp = await model.chat([ChatMessage(role="system", content=system),
                                     ChatMessage(role="user", content=user, images=images)], opts)
        except Exception as exc:  # noqa: BLE001 - spec: errors leave the query unchanged
            log.warning("query_understand failed: %s", exc)
            cm.note("query_understand", error=str(exc))
            if images:
                st.image_note = IMAGE_FAILED_NOTE.format(n=len(images), reason=str(exc)[:200])
            return await next()
        result = parse_understanding(resp.content, req.query)
        if images and not result.image_description and resp.content.strip() and not result.intent:
            # a VLM that answered in prose described the images instead of filling the JSON object
            result = Understanding(image_description=resp.content.strip(), parsed=True)
        if result.parsed:
            if result.rewrite:
                st.rewrite_query = result.rewrite
            st.intent = result.intent
            st.image_description = result.image_description
        if images and st.image_description:
            # Knora: the description also searches (a rewrite alone can drop what the image shows)
            described = st.image_description.strip()[:IMAGE_QUERY_CHARS]
            if described not in st.rewrite_query:
                st.rewrite_query = f"{st.rewrite_query.strip()}\n{described}".strip()
        elif images:
            st.image_note = IMAGE_FAILED_NOTE.format(n=len(images), reason="the vision model said nothing")
        cm.note("query_understand", rewrite=st.rewrite_query, intent=st.intent,
                images_described=bool(images and st.image_description))
        if not cm.needs_retrieval and st.intent:
            override = req.intent_prompt_overrides.get(st.intent, "")
            st.system_prompt_override = override if override.strip() else intent_prompts().get(st.intent, "")
        return await next()

    async def _model(self, cm: ChatManage) -> tuple[ChatModel | None, bool]:
        """The model that understands the question, and whether it sees the images (spec §2.3 selectModel):
        with images, the chat model when it has vision, else the VLM (``vlm_model_id``: the agent's, else a
        knowledge base's ``vlm_config``); without one the images are not described and the user is told
        (``image_note``), and the question is understood from its text."""
        req, st = cm.request, cm.state
        if req.images:
            if req.chat_model_supports_vision:
                model = await self._load(cm, [req.chat_model_id])
                if model is not None:
                    return model, True
            if req.vlm_model_id:
                model = await self._load(cm, [req.vlm_model_id])
                if model is not None:
                    return model, True
                st.image_note = IMAGE_FAILED_NOTE.format(n=len(req.images),
                                                         reason=f"the vision model {req.vlm_model_id} is "
                                                                "not available")
            else:
                st.image_note = NO_VLM_NOTE.format(n=len(req.images))
            if not req.enable_rewrite:
                return None, False
        candidates = [req.query_understand_model_id] if req.query_understand_model_id else []
        return await self._load(cm, [*candidates, req.chat_model_id]), False

    async def _load(self, cm: ChatManage, model_ids: Sequence[str]) -> ChatModel | None:
        for model_id in model_ids:
            try:
                model = await cm.chat_model(self._deps.chat_models, model_id)
            except Exception as exc:  # noqa: BLE001 - a missing dedicated model falls back to the chat model
                log.warning("query_understand model %s unavailable: %s", model_id, exc)
                continue
            return model if getattr(model, "generative", True) else None
        return None
