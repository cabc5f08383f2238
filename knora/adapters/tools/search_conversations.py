"""``search_conversations``: find earlier question/answer pairs in the tenant's other sessions (spec §6.13,
§7.5).

Lexical matching (words and CJK bigrams) over the most recent sessions' completed pairs; the current session
is excluded because its turns are already in the model's context.
"""

from __future__ import annotations

import re
from itertools import pairwise
from typing import Any, ClassVar

from knora.adapters.tools._base import BaseTool, need
from knora.domain.conversation import Viewer, unowned
from knora.ports.tool import ToolContext, ToolDeps, ToolResult

SESSIONS_SCANNED, MESSAGES_PER_SESSION, ANSWER_CHARS = 50, 40, 500
_WORD = re.compile(r"[0-9a-z]+")


def terms(text: str) -> set[str]:
    low = text.lower()
    cjk = [ch for ch in low if "\u4e00" <= ch <= "\u9fff"]
    return {w for w in _WORD.findall(low) if len(w) > 1} | {a + b for a, b in pairwise(cjk)} \
        | (set(cjk) if len(cjk) == 1 else set())


class SearchConversationsTool(BaseTool):
    name = "search_conversations"
    description = ("Search the user's earlier conversations (other sessions) for questions and answers "
                   "related to the query. Use when the user refers to something discussed before.")
    parameters: ClassVar[dict[str, Any]] = {"type": "object", "properties": {
        "query": {"type": "string", "minLength": 1},
        "limit": {"type": "integer", "minimum": 1, "maximum": 8, "default": 5}}, "required": ["query"]}

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        wanted = terms(str(args["query"]))
        if not wanted:
            return ToolResult.fail("query has no searchable words")
        conv = need(self.deps.conversations, "the conversation store")
        owner = None if unowned(ctx.session_user_id) else ctx.session_user_id
        sessions, _total = await conv.sessions.list(ctx.session_tenant_id, page=1, page_size=SESSIONS_SCANNED,
                                                    viewer=Viewer(owner))  # the owner's alone
        hits: list[dict[str, Any]] = []
        for session in sessions:
            if session.id == ctx.session_id:
                continue
            by_request: dict[str, dict[str, Any]] = {}
            for m in await conv.messages.recent(session.id, MESSAGES_PER_SESSION):
                by_request.setdefault(m.request_id or m.id, {})[m.role] = m
            for pair in by_request.values():
                user, bot = pair.get("user"), pair.get("assistant")
                if user is None or bot is None or not bot.is_completed or not bot.content:
                    continue
                score = len(wanted & terms(f"{user.content}\n{bot.content}")) / len(wanted)
                if score > 0:
                    hits.append({"session_id": session.id, "session_title": session.title,
                                 "score": round(score, 3),
                                 "date": user.created_at.date().isoformat(), "question": user.content,
                                 "answer": bot.content[:ANSWER_CHARS]})
        hits.sort(key=lambda h: h["date"], reverse=True)  # newest first among equal scores (stable sort)
        hits.sort(key=lambda h: -h["score"])
        hits = hits[:int(args.get("limit") or 5)]
        if not hits:
            return ToolResult(output=f"No earlier conversation matches {args['query']!r}.",
                              data={"results": []})
        text = "\n\n".join(f"[{h['date']}] {h['session_title'] or 'Untitled'}\n"
                           f"Q: {h['question']}\nA: {h['answer']}" for h in hits)
        return ToolResult(output=text, data={"display_type": "conversation_results", "results": hits})


def make(deps: ToolDeps) -> SearchConversationsTool | None:
    return SearchConversationsTool(deps) if deps.conversations is not None else None
