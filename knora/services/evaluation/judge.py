"""Judged faithfulness: a chat model says whether an answer is supported by the passages it cites (prompt
``faithfulness_judge`` in ``knora/prompts/evaluation.yaml``). Scores: supported 1, partial 0.5,
unsupported 0; a reply that names no verdict is counted as not judged (``None``), never as a score."""

from __future__ import annotations

import json
import re

from knora import prompts
from knora.ports.chat import ChatMessage, ChatModel, ChatOptions

SCORES = {"supported": 1.0, "partial": 0.5, "unsupported": 0.0}
_VERDICT = re.compile(r"\b(unsupported|partial|supported)\b", re.IGNORECASE)
MAX_PASSAGE_CHARS = 2000


def parse_verdict(reply: str) -> float | None:
    text = reply.strip()
    match = re.search(r"\{.*\}", text, re.DOTALL)
    if match:
        try:
            verdict = str(json.loads(match.group(0)).get("verdict", "")).strip().lower()
            if verdict in SCORES:
                return SCORES[verdict]
        except (json.JSONDecodeError, AttributeError):
            pass
    found = _VERDICT.search(text)
    return SCORES[found.group(1).lower()] if found else None


async def judge_faithfulness(model: ChatModel, question: str, answer: str,
                             passages: list[str]) -> float | None:
    listed = "\n\n".join(f"[{i}] {p[:MAX_PASSAGE_CHARS]}" for i, p in enumerate(passages, 1)) or "(none)"
    user = prompts.render(prompts.user_content("faithfulness_judge"),
                          {"question": question, "passages": listed, "answer": answer})
    reply = await model.chat([ChatMessage(role="system", content=prompts.content("faithfulness_judge")),
                              ChatMessage(role="user", content=user)],
                             ChatOptions(temperature=0.0, thinking=False, max_tokens=200))
    return parse_verdict(reply.content)
