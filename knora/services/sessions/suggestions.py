"""Suggested follow-up questions under an answer (WeKnora's message suggestions: ``GET``/``POST
/sessions/:sid/messages/:mid/suggestions``).

With a generative chat model the questions are written by it, from the question, the answer and the titles of
the passages the answer used. Without one (Knora's extractive answerer, or a model that fails) they are built
from those passages themselves: the section headings they carry, the other documents they come from, and the
terms they stress that the question did not name — each phrased as a question in the language of the user's
question. Either way every suggestion points at something the sources of that answer contain, so asking it
finds an answer; a turn that used no sources gets no suggestions (status ``suppressed``) rather than invented
ones. The set is kept with the assistant message (its ``debug`` record), so a reload shows the same questions
until the client asks to regenerate them.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

from knora.domain.common import new_id, rfc3339, utcnow
from knora.domain.conversation import Message
from knora.domain.errors import NotFound
from knora.domain.think import drop_closed_think
from knora.ports.chat import ChatMessage, ChatOptions
from knora.services.sessions.service import ChatModelGetter, SessionService

log = logging.getLogger(__name__)

MAX_QUESTIONS = 3
MAX_QUESTION_RUNES = 120
KEY = "suggestions"  # the message's debug record keeps the set under this key

PROMPT = (
    "Suggest {n} short follow-up questions the user could ask next, given their question, the answer they "
    "got and the sources the answer used. Each question must be answerable from those sources and must not "
    "repeat the question already asked. Reply with the questions only, one per line, no numbering, in the "
    "same language as the user's question."
)

# section headings below the document's own title (a level-1 heading is usually the title itself)
_HEADING = re.compile(r"^\s{0,3}#{2,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)
_WORD = re.compile(r"[A-Za-z][A-Za-z\-]{3,}|[\u4e00-\u9fff]{2,6}")
_CJK = re.compile(r"[\u4e00-\u9fff]")
_LIST_MARK = re.compile(r"^\s*(?:[-*•]|\d+[.)、]|[（(]?\d+[）)])\s*")
_STOP = frozenset((  # noqa: SIM905 - a word list reads better as text
    "about above after again against also among another because been before being below between both could "
    "does doing down during each from further have having here into itself just like many more most much "
    "must only other over same should some such than that their them then there these they this those "
    "through under until very were what when where which while whom whose will with within without would "
    "your yours").split())


def _cjk(text: str) -> bool:
    return len(_CJK.findall(text)) * 3 >= max(1, len(text.strip()) // 2)


def _words(text: str) -> set[str]:
    """Words by a crude stem (the first four letters), so "brewing" is asked when "brew" was."""
    return {w.lower()[:4] for w in _WORD.findall(text)}


def _what_is(term: str) -> str:
    plural = term.endswith("s") and not term.endswith(("ss", "us", "is"))
    return f"What {'are' if plural else 'is'} {term}?"


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_QUESTION_RUNES else text[:MAX_QUESTION_RUNES - 1].rstrip() + "…"


def from_sources(question: str, answer: str, references: Sequence[dict[str, Any]]) -> list[dict[str, str]]:
    """Up to three questions drawn from the passages an answer used (no model needed)."""
    zh = _cjk(question)
    asked = _words(question)
    out: list[dict[str, str]] = []
    seen: set[str] = set()

    def add(text: str, category: str, kb_id: str) -> None:
        key = text.lower()
        if key not in seen and len(out) < MAX_QUESTIONS:
            seen.add(key)
            out.append({"text": _clip(text), "category": category, "kb": kb_id})

    titled = [(str(r.get("knowledge_title") or "").strip(), str(r.get("content") or ""),
               str(r.get("knowledge_base_id") or "")) for r in references]
    # 1. sections of the sources the question did not ask about
    for title, content, kb_id in titled:
        for heading in _HEADING.findall(content):
            heading = heading.strip(" *_`")
            if heading and _words(heading) - asked and heading.lower() != title.lower():
                doc = title or heading
                add(f"{doc}中关于“{heading}”的内容是什么？" if zh
                    else f"What does {doc} say about {heading}?", "deepen", kb_id)
    # 2. the other documents the answer drew on
    docs = list(dict.fromkeys((t, kb) for t, _, kb in titled if t))
    for title, kb_id in docs[1:] if len(docs) > 1 else docs:
        if _words(title) - asked:
            add(f"{title}还介绍了哪些内容？" if zh else f"What else does {title} cover?", "action", kb_id)
    # 3. terms the sources stress that neither the question nor the answer explains
    said = asked | _words(answer)
    counts: Counter[str] = Counter()
    form: dict[str, str] = {}  # a term as written: lower case if it is ever written so (not a name)
    first_kb: dict[str, str] = {}
    for _, content, kb_id in titled:
        for w in _WORD.findall(content):
            lw = w.lower()
            if lw not in _STOP and lw[:4] not in asked:
                counts[lw] += 1
                form[lw] = lw if w == lw or form.get(lw) == lw else w
                first_kb.setdefault(lw, kb_id)
    for term, n in counts.most_common(12):
        if n < 2 and len(out) >= 1:
            break
        if term[:4] in said and n < 3:
            continue
        shown = form[term]
        add(f"什么是{shown}？" if zh else _what_is(shown), "clarify", first_kb.get(term, ""))
    return out


def parse_model_lines(text: str) -> list[str]:
    lines = []
    for line in drop_closed_think(text).splitlines():
        line = _LIST_MARK.sub("", line).strip().strip('"“”')
        if len(line) >= 4:
            lines.append(_clip(line))
    return list(dict.fromkeys(lines))[:MAX_QUESTIONS]


class SuggestionService:
    def __init__(self, sessions: SessionService, chat_model: ChatModelGetter | None = None) -> None:
        self._sessions = sessions
        self._chat_model = chat_model

    async def get(self, tenant_id: int, session_id: str, message_id: str) -> dict[str, Any]:
        """The stored set, or a new one for a message that has none yet."""
        message = await self._assistant_message(tenant_id, session_id, message_id)
        stored = message.debug.get(KEY)
        if isinstance(stored, dict) and message.is_completed:
            return stored
        return await self._make(tenant_id, message)

    async def ensure(self, tenant_id: int, session_id: str, message_id: str, *,
                     regenerate: bool = False) -> dict[str, Any]:
        message = await self._assistant_message(tenant_id, session_id, message_id)
        stored = message.debug.get(KEY)
        if isinstance(stored, dict) and not regenerate and message.is_completed:
            return stored
        return await self._make(tenant_id, message)

    async def _assistant_message(self, tenant_id: int, session_id: str, message_id: str) -> Message:
        await self._sessions.get(tenant_id, session_id)  # 404 for another tenant's or an unknown session
        message = await self._sessions.get_message(tenant_id, message_id)
        if message is None or message.session_id != session_id or message.role != "assistant":
            raise NotFound("Message not found")
        return message

    async def _make(self, tenant_id: int, message: Message) -> dict[str, Any]:
        base: dict[str, Any] = {"id": new_id(), "session_id": message.session_id,
                                "assistant_message_id": message.id, "questions": []}
        if not message.is_completed:  # the answer is still being written: ask again once it is done
            return {**base, "status": "generating", "allow_regenerate": False}
        question = await self._question_of(message)
        answer = drop_closed_think(message.content)
        refs = [r for r in message.knowledge_references if isinstance(r, dict)]
        kb_ids = list(dict.fromkeys(str(r["knowledge_base_id"]) for r in refs if r.get("knowledge_base_id")))
        items: list[dict[str, Any]] = []
        lines = await self._from_model(tenant_id, message, question, answer, refs) if refs else []
        if lines:
            items = [{"id": new_id(), "text": t, "category": "deepen", "source": "model",
                      "knowledge_base_ids": kb_ids} for t in lines]
        else:
            items = [{"id": new_id(), "text": q["text"], "category": q["category"], "source": "document",
                      "knowledge_base_ids": [q["kb"]] if q["kb"] else kb_ids}
                     for q in from_sources(question, answer, refs)]
        out: dict[str, Any] = {**base, "status": "ready" if items else "suppressed", "allow_regenerate": True,
                               "questions": items, "generated_at": rfc3339(utcnow())}
        if not items:
            out["suppression_reason"] = "no_sources" if not refs else "nothing_to_suggest"
        await self._sessions.messages.update_fields(message.id, debug={**message.debug, KEY: out})
        return out

    async def _question_of(self, message: Message) -> str:
        if not message.request_id:
            return ""
        pair = await self._sessions.messages.by_request(message.session_id, message.request_id)
        return next((m.content for m in pair if m.role == "user"), "")

    async def _from_model(self, tenant_id: int, message: Message, question: str, answer: str,
                          refs: Sequence[dict[str, Any]]) -> list[str]:
        if self._chat_model is None:
            return []
        try:
            model = await self._chat_model(message.model_id or None, tenant_id)
            if model is None or str(getattr(model, "model_id", "")).endswith("extractive"):
                return []
            first: dict[str, str] = {}  # one passage per document, the best ranked
            for r in refs:
                title = str(r.get("knowledge_title") or "")
                if title and title not in first:
                    first[title] = str(r.get("content") or "")[:300]
            sources = "\n".join(f"- {t}: {c}" for t, c in first.items())
            reply = await model.chat(
                [ChatMessage(role="system", content=PROMPT.format(n=MAX_QUESTIONS)),
                 ChatMessage(role="user", content=f"Question: {question}\n\nAnswer: {answer[:2000]}\n\n"
                                                  f"Sources:\n{sources}")],
                ChatOptions(temperature=0.5, thinking=False, max_tokens=256))
            return parse_model_lines(reply.content)
        except Exception:  # noqa: BLE001 - the sources still give suggestions
            log.warning("suggestion generation failed; using the sources", exc_info=True)
            return []
