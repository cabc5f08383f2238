"""``into_chat_message`` (spec §2.16): validate the query, register the passages in the turn's reference
registry, render the model-context XML and the system prompt / user message that carry it.

The answering model sees the ORIGINAL query (retrieval used the rewrite). When neither the system prompt nor
the context template has a ``{contexts}`` placeholder, the XML is prepended to the user message.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from knora import prompts
from knora.ports.turn import TurnContext
from knora.services.pipeline.contexts import render_context
from knora.services.pipeline.errors import ERR_TEMPLATE_EXECUTE, PluginError
from knora.services.pipeline.framework import Next
from knora.services.pipeline.state import ChatManage, EventType

IMAGE_SUFFIX = "\n\n[用户上传图片内容]\n"
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_XSS = re.compile(
    r"(?is)<script\b.*?>.*?</script>|<iframe\b.*?>.*?</iframe>|<object\b.*?>.*?</object>|<embed\b[^>]*>"
    r"|<form\b.*?>.*?</form>|<input\b[^>]*>|<button\b.*?>.*?</button>|javascript:|vbscript:"
    r"|onload\s*=|onerror\s*=|onclick\s*=|onmouseover\s*=|onfocus\s*=|onblur\s*="
)
IMAGE_REQUIREMENT = """## Retrieved Image Output Requirement
The retrieved information contains images. Include at least one relevant retrieved image verbatim as
![alt](url) with ASCII parentheses, right after the paragraph it supports; spread images over the \
sections they
illustrate, and check before finishing that every image you show came from the retrieved information."""


def validate_input(text: str) -> str | None:
    """The trimmed query, or None when it holds control characters or markup/script injection patterns."""
    if _CONTROL.search(text) or _XSS.search(text):
        return None
    return text.strip()


def _has_placeholder(template: str, key: str) -> bool:
    return f"{{{key}}}" in template or re.search(r"\{\{\s*" + key + r"\s*\}\}", template) is not None


class IntoChatMessage:
    def activation_events(self) -> Sequence[EventType]:
        return (EventType.INTO_CHAT_MESSAGE,)

    async def on_event(self, ctx: TurnContext, event_type: EventType, cm: ChatManage,
                       next: Next) -> PluginError | None:
        req, st = cm.request, cm.state
        query = validate_input(req.query)
        if query is None:
            return ERR_TEMPLATE_EXECUTE.with_error("user query contains invalid content")
        suffix = ""
        if st.image_description and not req.chat_model_supports_vision:
            suffix += IMAGE_SUFFIX + st.image_description
        if st.quoted_context:
            suffix += "\n\n" + st.quoted_context
        template = req.summary.context_template
        base = st.system_prompt_override or req.summary.prompt
        lang = req.language
        if not cm.needs_retrieval:
            text = (validate_input(st.rewrite_query) or query) + suffix
            st.rendered_contexts = ""
            st.user_content = prompts.render(template, {"query": text, "contexts": "", "language": lang}) \
                if template else text
            st.system_prompt = prompts.render(base, {"query": req.query, "contexts": "", "language": lang})
            return await next()
        rendered = render_context(st.merge_result, ctx.references, faq_priority=req.faq_priority_enabled,
                                  faq_exact_threshold=req.faq_direct_answer_threshold)
        st.rendered_contexts = rendered.xml
        st.passages = rendered.passages
        cm.note("into_chat_message", passages=len(rendered.passages))
        values = {"query": query, "contexts": rendered.xml, "language": lang}
        user = prompts.render(template, values) if template else query
        system = prompts.render(base, values)
        if rendered.xml and not _has_placeholder(template, "contexts") and not _has_placeholder(base,
                                                                                                "contexts"):
            user = rendered.xml + "\n\n" + user
        if rendered.has_images:
            system = system.rstrip() + "\n\n" + IMAGE_REQUIREMENT
        st.user_content = user + suffix
        st.system_prompt = system
        return await next()
