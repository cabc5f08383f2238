"""An OpenAI ``messages`` list → the turn's query and history (docs/openai-api.md).

The last message must be the user's: it is the query, together with any user messages right before it that
no assistant message answered (a client that sent two in a row). Earlier user messages, each with the
assistant messages that follow it, become ``HistoryTurn`` pairs, oldest first; the runner keeps as many as
its settings say. ``system``/``developer`` messages are left out: the tenant's agent and pipeline own the
system prompt. ``tool``/``function`` messages are left out too (this API offers no tools to the client).
An assistant message this API wrote carries a sources list after ``SOURCES_RULE``; it is cut off, so the
model sees the answer, not the list, in its history.
"""

from __future__ import annotations

from dataclasses import dataclass

from knora.domain.errors import BadRequest
from knora.ports.turn import HistoryTurn

# What the API writes between an answer and its sources list (a Markdown rule and a heading).
SOURCES_RULE = "\n\n---\n**Sources**\n"
_CONVERSATION_ROLES = ("user", "assistant")


@dataclass(frozen=True)
class ClientMessage:
    role: str
    text: str


@dataclass(frozen=True)
class Conversation:
    query: str
    history: list[HistoryTurn]


def strip_sources(answer: str) -> str:
    at = answer.rfind(SOURCES_RULE)
    return answer[:at] if at >= 0 else answer


def split_conversation(messages: list[ClientMessage]) -> Conversation:
    talk = [m for m in messages if m.role in _CONVERSATION_ROLES]
    if not talk or talk[-1].role != "user":
        raise BadRequest("The last message must be a user message: it is the question")
    end = len(talk)
    while end > 0 and talk[end - 1].role == "user":
        end -= 1
    query = "\n\n".join(m.text for m in talk[end:] if m.text.strip())
    if not query.strip():
        raise BadRequest("The last user message has no text")
    history: list[HistoryTurn] = []
    asked: list[str] = []
    answers: list[str] = []

    def close_pair() -> None:
        if asked and answers:
            history.append(HistoryTurn(query="\n\n".join(asked), answer="\n\n".join(answers)))
        asked.clear()
        answers.clear()

    for m in talk[:end]:
        if m.role == "user":
            if answers:
                close_pair()
            asked.append(m.text)
        elif asked:
            answers.append(strip_sources(m.text))
    close_pair()
    return Conversation(query=query, history=history)
