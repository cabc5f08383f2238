"""``POST /messages/search``: search the tenant's conversations, answered as WeKnora's ``MessageSearchResult``
(question and answer of one turn side by side, best match first).

WeKnora searches messages by keyword, by vector (a chat-history knowledge base it embeds messages into) or
both. Knora does not embed messages, so every mode is a keyword search here, and each item says so in its
``match_type``: a caller asking for ``vector`` gets keyword matches labelled as keyword matches, never results
pretending to be semantic. A message matches when it contains every word of the query; the score is the share
of the query's words found, plus a little for each repeat, so turns that talk about the query rank first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from knora.domain.common import rfc3339
from knora.domain.conversation import Message, Viewer
from knora.domain.errors import ValidationFailed
from knora.domain.think import drop_closed_think
from knora.ports.conversation_store import MessageRepo

MODES = ("keyword", "vector", "hybrid")
DEFAULT_LIMIT = 20
MAX_LIMIT = 100
_CANDIDATES_PER_RESULT = 5
_MAX_TERMS = 8


@dataclass
class _Group:
    request_id: str
    session_id: str
    session_title: str
    score: float
    created_at: Any
    query: str = ""
    answer: str = ""


def terms_of(query: str) -> list[str]:
    words = list(dict.fromkeys(w for w in query.split() if w))
    return words[:_MAX_TERMS]


def _score(content: str, terms: Sequence[str]) -> float:
    text = content.lower()
    counts = [text.count(t.lower()) for t in terms]
    found = sum(1 for c in counts if c)
    return round(found / len(terms) + 0.01 * min(sum(counts), 50), 4)


async def search_messages(messages: MessageRepo, tenant_id: int, query: str, *, mode: str = "",
                          limit: int = DEFAULT_LIMIT, session_ids: Sequence[str] = (),
                          viewer: Viewer | None = None) -> dict[str, Any]:
    query = query.strip()
    if not query:
        raise ValidationFailed("Query content cannot be empty")
    if mode and mode not in MODES:
        raise ValidationFailed(f"mode must be one of {', '.join(MODES)}")
    if limit <= 0:
        limit = DEFAULT_LIMIT
    limit = min(limit, MAX_LIMIT)
    terms = terms_of(query)
    found = await messages.search(tenant_id, terms, session_ids=session_ids,
                                  limit=limit * _CANDIDATES_PER_RESULT, viewer=viewer)
    groups: dict[tuple[str, str], _Group] = {}
    for message, title in found:
        key = (message.session_id, message.request_id or message.id)
        group = groups.get(key)
        score = _score(message.content, terms)
        if group is None:
            group = groups[key] = _Group(key[1], message.session_id, title, score, message.created_at)
        group.score = max(group.score, score)
        group.created_at = min(group.created_at, message.created_at)
        _fill(group, message)
    ranked = sorted(groups.values(), key=lambda g: (-g.score, -g.created_at.timestamp()))[:limit]
    for group in ranked:  # the other half of each turn, so question and answer show side by side
        if group.request_id and not (group.query and group.answer):
            for message in await messages.by_request(group.session_id, group.request_id):
                if message.tenant_id == tenant_id:
                    _fill(group, message)
    items = [{"request_id": g.request_id, "session_id": g.session_id, "session_title": g.session_title,
              "query_content": g.query, "answer_content": g.answer, "score": g.score, "match_type": "keyword",
              "created_at": rfc3339(g.created_at)} for g in ranked]
    return {"items": items, "total": len(items)}


def _fill(group: _Group, message: Message) -> None:
    if message.role == "user" and not group.query:
        group.query = message.content
    elif message.role == "assistant" and not group.answer:
        group.answer = drop_closed_think(message.content)
