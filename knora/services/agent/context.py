"""Context-window management for the ReAct loop (spec §6.5) and message sanitising (§6.4.1).

Without it a run with a few large tool results would overflow the model's window: the current turn's tool
results get a token budget (newest first), long histories are summarised by the model, and above 80 % the
oldest history groups are dropped. Token counts are estimates: tiktoken is not a dependency, so the documented
fallback ``(utf8 bytes + 3) // 4`` per text plus the per-message overheads is used.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from knora.ports.chat import ChatMessage, ChatModel, ChatOptions

log = logging.getLogger(__name__)

DEFAULT_MAX_CONTEXT_TOKENS = 200_000
CONSOLIDATION_THRESHOLD = 0.5
COMPRESS_THRESHOLD = 0.8
PREVIEW_SEPARATOR = "\n...[tool result preview omitted]...\n"
SUMMARY_PROMPT = ("You are a conversation summarizer. Condense the conversation below into a faithful "
                  "summary that keeps every fact, number, name, decision and open question needed to "
                  "continue it. Aim for 30% or less of the original length. Output only the summary.")


def estimate_text(text: str) -> int:
    return (len(text.encode()) + 3) // 4 if text else 0


def estimate_message(m: ChatMessage) -> int:
    tokens = 3 + estimate_text(m.content) + estimate_text(m.reasoning_content)
    for call in m.tool_calls:
        tokens += 4 + estimate_text(call.name) + estimate_text(call.arguments)
    return tokens


def estimate(messages: Sequence[ChatMessage]) -> int:
    return 3 + sum(estimate_message(m) for m in messages)


def sanitize(messages: Sequence[ChatMessage]) -> list[ChatMessage]:
    """Spec §6.4.1: drop empty messages, merge same-role neighbours, orphan tool results become system
    notes."""
    out: list[ChatMessage] = []
    declared: set[str] = set()
    for m in messages:
        if m.role not in ("system", "tool") and not m.content and not m.tool_calls:
            continue
        if m.role == "tool":
            if m.tool_call_id not in declared:
                out.append(ChatMessage(role="system",
                                       content=f"[Tool result for {m.name or 'tool'}]: {m.content}"))
                continue
            out.append(m)
            continue
        if m.role == "assistant":
            declared.update(c.id for c in m.tool_calls)
        prev = out[-1] if out else None
        if prev is not None and m.role in ("user",
                                           "assistant") and prev.role == m.role and not prev.tool_calls:
            out[-1] = prev.model_copy(update={"content": f"{prev.content}\n\n{m.content}".strip(),
                                              "tool_calls": m.tool_calls if m.role == "assistant" else []})
            continue
        if prev is not None and m.role in ("user", "assistant") and prev.role == m.role:
            out[-1] = prev.model_copy(update={"content": f"{prev.content}\n\n{m.content}".strip()})
            continue
        out.append(m)
    return out


def tool_budget(max_context_tokens: int) -> int:
    return min(max(max_context_tokens // 5, 8192), 32768)


def _preview(text: str, keep: int) -> str:
    head = keep // 4
    return text[:head] + PREVIEW_SEPARATOR + text[len(text) - (keep - head):]


def trim_current_turn_tool_results(messages: list[ChatMessage], max_context_tokens: int) -> list[ChatMessage]:
    """Spec §6.5 step 1, on a copy: tool results after the last user message share one budget, newest
    first."""
    last_user = max((i for i, m in enumerate(messages) if m.role == "user"), default=-1)
    idx = [i for i in range(last_user + 1, len(messages)) if messages[i].role == "tool"]
    budget = tool_budget(max_context_tokens)
    if sum(estimate_text(messages[i].content) for i in idx) <= budget:
        return messages
    out = list(messages)
    for i in idx:
        size = len(messages[i].content.encode())
        out[i] = messages[i].model_copy(update={"content": (
            f"[Tool result compacted: original_bytes={size}. Re-run the tool with narrower filters or a "
            "smaller range if more detail is needed.]")})
    remaining = budget - sum(estimate_text(out[i].content) for i in idx)
    for i in reversed(idx):
        text = messages[i].content
        cost = estimate_text(text) - estimate_text(out[i].content)
        if cost <= remaining:
            out[i] = messages[i]
            remaining -= cost
            continue
        lo, hi = 0, len(text)
        while lo < hi:  # largest preview that fits
            mid = (lo + hi + 1) // 2
            if estimate_text(_preview(text, mid)) - estimate_text(out[i].content) <= remaining:
                lo = mid
            else:
                hi = mid - 1
        if lo > 0:
            out[i] = messages[i].model_copy(update={"content": _preview(text, lo)})
        break
    return out


def _groups(history: list[ChatMessage]) -> list[list[ChatMessage]]:
    """An assistant message with tool calls and its tool results form one group (never split)."""
    groups: list[list[ChatMessage]] = []
    for m in history:
        if m.role == "tool" and groups and (groups[-1][0].tool_calls or groups[-1][0].role == "tool"):
            groups[-1].append(m)
        else:
            groups.append([m])
    return groups


def _split(messages: list[ChatMessage]) -> tuple[list[ChatMessage], list[ChatMessage], list[ChatMessage]]:
    """(system prefix, history, current turn from the last user message on)."""
    head = 0
    while head < len(messages) and messages[head].role == "system":
        head += 1
    last_user = max((i for i, m in enumerate(messages) if m.role == "user"), default=len(messages))
    last_user = max(last_user, head)
    return messages[:head], messages[head:last_user], messages[last_user:]


def compress(messages: list[ChatMessage], max_context_tokens: int) -> list[ChatMessage]:
    """Spec §6.5 step 3: above 80 %, drop the oldest history groups; system and current turn stay."""
    limit = int(max_context_tokens * COMPRESS_THRESHOLD)
    total = estimate(messages)
    if total <= limit:
        return messages
    system, history, tail = _split(messages)
    groups = _groups(history)
    while groups and total > limit:
        total -= sum(estimate_message(m) for m in groups.pop(0))
    return [*system, *[m for g in groups for m in g], *tail]


async def consolidate(messages: list[ChatMessage], max_context_tokens: int, model: ChatModel,
                      *, timeout: float = 60.0, attempts: int = 3) -> list[ChatMessage]:
    """Spec §6.5 step 2: above 50 %, summarise older history with the model (raw excerpts if it fails)."""
    if estimate(messages) <= max_context_tokens * CONSOLIDATION_THRESHOLD or len(messages) <= 3:
        return messages
    system, history, tail = _split(messages)
    if len(history) < 2:
        return messages
    target = int(max_context_tokens * CONSOLIDATION_THRESHOLD * 0.6)
    room = target - estimate(system) - estimate(tail) - 500
    kept: list[list[ChatMessage]] = []
    groups = _groups(history)
    while groups and sum(estimate_message(m) for m in groups[-1]) <= room:
        room -= sum(estimate_message(m) for m in groups[-1])
        kept.insert(0, groups.pop())
    old = [m for g in groups for m in g]
    if not old:
        return messages
    transcript = "\n\n".join(f"[{m.role}] {m.content}" for m in old if m.content)
    summary = ""
    for _ in range(attempts):
        try:
            resp = await asyncio.wait_for(model.chat(
                [ChatMessage(role="system", content=SUMMARY_PROMPT), ChatMessage(role="user",
                                                                                 content=transcript)],
                ChatOptions(temperature=0.3, max_tokens=2000)), timeout)
            summary = resp.content.strip()
            if summary:
                break
        except Exception:
            log.debug("consolidation attempt failed", exc_info=True)
    if not summary:
        caps = {"user": 2000, "assistant": 1000}
        summary = "\n".join(f"[{m.role}] {m.content[:caps.get(m.role, 500)]}" for m in old if m.content)
    note = ChatMessage(role="system",
                       content=f"[Memory Summary - {len(old)} earlier messages consolidated]\n\n{summary}")
    return [*system, note, *[m for g in kept for m in g], *tail]
