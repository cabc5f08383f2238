"""``chunk_rerank`` (spec §2.9): clean passages, score them with the rerank model, threshold with a top-1
fallback and one degraded retry, composite score, FAQ boost, MMR (λ = 0.7). Calls ``next()`` only on success,
so the boosts registered after it (wiki boost) are skipped when rerank keeps nothing.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from typing import Any

from knora.domain.search import SearchResult
from knora.ports.reranker import RerankScore
from knora.ports.turn import TurnContext
from knora.services.pipeline.deps import PipelineDeps
from knora.services.pipeline.errors import ERR_GET_RERANK_MODEL, ERR_SEARCH_NOTHING, PluginError
from knora.services.pipeline.framework import Next
from knora.services.pipeline.state import ChatManage, EventType
from knora.services.pipeline.textutil import is_web, jaccard, tokenize_simple
from knora.services.retrieval.bounds import engine_query

log = logging.getLogger(__name__)

MMR_LAMBDA = 0.7
FALLBACK_MIN = 0.15
DEGRADE_ABOVE = 0.3

_CLEAN_STEPS: tuple[tuple[re.Pattern[str], Any], ...] = (
    (re.compile(r"```[^\n`]*\n(.*?)\n?```", re.DOTALL), r"\1"),  # 1 fenced code → body
    (re.compile(r"\$\$(.*?)\$\$", re.DOTALL), r"\1"),  # 2 display math → inner text
    (re.compile(r"</?[a-zA-Z][^>]*>"), ""),  # 3 HTML tags
    (re.compile(r"\[(!\[[^\]]*\]\([^)]*\))\]\([^)]*\)"), r"\1"),  # 3.5 linked image → image
    (re.compile(r"!\[[^\]]*\]\((?:[^()]|\([^()]*\))*\)"), ""),  # 4 images
    (re.compile(r"\[([^\]]*)\]\([^)]*\)"), r"\1"),  # 5 links → text
    (re.compile(r"https?://[^\s)\]>]+"), ""),  # 6 raw URLs
    (re.compile(r"(?m)^[ \t]*\|[ \t:|-]+\|[ \t]*$"), ""),  # 7 table separator rows
    (re.compile(r"(?m)^[ \t]*\|(.+?)\|[ \t]*$"),  # 7.5 table rows → "a, b"
     lambda m: ", ".join(c.strip() for c in m.group(1).split("|") if c.strip())),
    (re.compile(r"(?m)^#{1,6}\s+"), ""),  # 8 heading markers
    (re.compile(r"(?m)^>\s?"), ""),  # 9 blockquote markers
    (re.compile(r"\*\*\*(.+?)\*\*\*"), r"\1"),  # 10 emphasis
    (re.compile(r"\*\*(.+?)\*\*"), r"\1"),
    (re.compile(r"\*(.+?)\*"), r"\1"),
    (re.compile(r"(?m)^[\t ]*(?:[-*+]|\d+\.)\s+"), ""),  # 11 list markers
    (re.compile(r"\n{3,}"), "\n\n"),  # 12 blank runs
)


def clean_passage_for_rerank(text: str) -> str:
    for pattern, repl in _CLEAN_STEPS:
        text = pattern.sub(repl, text)
    return text.strip()


def image_infos(r: SearchResult) -> list[dict[str, Any]]:
    if not r.image_info:
        return []
    try:
        value = json.loads(r.image_info)
    except (json.JSONDecodeError, TypeError):
        return []
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def generated_questions(r: SearchResult) -> list[str]:
    meta = r.chunk_metadata or {}
    out: list[str] = []
    for q in meta.get("generated_questions") or []:
        text = q.get("question") if isinstance(q, dict) else q
        if isinstance(text, str) and text.strip():
            out.append(text.strip())
    return out


def enriched_passage(r: SearchResult) -> str:
    cleaned = clean_passage_for_rerank(r.content)
    extras = [v for info in image_infos(r) for v in (info.get("caption"), info.get("ocr_text"))
              if isinstance(v, str) and v.strip()]
    questions = generated_questions(r)
    if questions:
        extras.append("; ".join(questions))
    if not extras:
        return cleaned
    return f"{cleaned}\n\n" + "\n".join(extras) if cleaned else "\n".join(extras)


def apply_threshold(scores: Sequence[RerankScore], threshold: float,
                    fallback_min: float) -> list[RerankScore]:
    kept = [s for s in scores if s.score >= threshold]
    if not kept and scores and scores[0].score >= fallback_min:
        kept = [scores[0]]
    return kept


def composite_score(model_score: float, base_score: float, web: bool) -> float:
    return min(1.0, max(0.0, 0.6 * model_score + 0.3 * base_score + 0.1 * (0.95 if web else 1.0)))


def mmr(results: Sequence[SearchResult], k: int, passages: dict[str, str], lam: float = MMR_LAMBDA
        ) -> list[SearchResult]:
    tokens = [tokenize_simple(passages.get(r.id, r.content)) for r in results]
    chosen: list[int] = []
    remaining = list(range(len(results)))
    while remaining and len(chosen) < k:
        best_i, best_v = remaining[0], float("-inf")
        for i in remaining:
            redundancy = max((jaccard(tokens[i], tokens[j]) for j in chosen), default=0.0)
            value = lam * results[i].score - (1 - lam) * redundancy
            if value > best_v:
                best_i, best_v = i, value
        chosen.append(best_i)
        remaining.remove(best_i)
    return [results[i] for i in chosen]


class ChunkRerank:
    def __init__(self, deps: PipelineDeps) -> None:
        self._deps = deps

    def activation_events(self) -> Sequence[EventType]:
        return (EventType.CHUNK_RERANK,)

    async def on_event(self, ctx: TurnContext, event_type: EventType, cm: ChatManage,
                       next: Next) -> PluginError | None:
        req, st = cm.request, cm.state
        if not cm.needs_retrieval or not st.search_result:
            return await next()
        try:
            reranker = await self._deps.rerankers.get(req.rerank_model_id or None, tenant_id=req.tenant_id)
        except Exception as exc:  # noqa: BLE001 - spec: model load failure is a stage failure
            return ERR_GET_RERANK_MODEL.with_error(exc)
        if reranker is None:
            cm.note("chunk_rerank", skipped="no rerank model")
            return await next()
        candidates: list[SearchResult] = []
        passages: dict[str, str] = {}
        for r in st.search_result:
            p = enriched_passage(r)
            if p.strip():
                candidates.append(r)
                passages[r.id] = p
        try:
            scores = await reranker.rerank(engine_query(cm.search_query),
                                           [passages[r.id] for r in candidates])
        except Exception as exc:  # noqa: BLE001 - spec: API failure → raw candidates, merge sorts them
            log.warning("rerank failed, using search order: %s", exc)
            cm.note("chunk_rerank", error=str(exc))
            st.rerank_result = []
            return await next()
        scores = sorted((s for s in scores if 0 <= s.index < len(candidates)), key=lambda s: (-s.score,
                                                                                              s.index))
        fallback_min = 0.0 if req.has_recall_threshold_override else FALLBACK_MIN
        kept = apply_threshold(scores, req.rerank_threshold, fallback_min)
        if not kept and req.rerank_threshold > DEGRADE_ABOVE:
            # WeKnora calls the model again with the lower threshold; the scores cannot change, so re-filter.
            kept = apply_threshold(scores, max(req.rerank_threshold * 0.7, DEGRADE_ABOVE), fallback_min)
        reranked: list[SearchResult] = []
        for s in kept:
            r = candidates[s.index]
            meta = {**r.metadata, "base_score": f"{r.score:.4f}", "model_score": f"{s.score:.4f}"}
            score = composite_score(s.score, r.score, is_web(r))
            if req.faq_priority_enabled and req.faq_score_boost > 1.0 and r.chunk_type == "faq":
                meta["faq_boosted"] = "true"
                meta["faq_original_score"] = f"{score:.4f}"
                score = min(score * req.faq_score_boost, 1.0)
            reranked.append(r.model_copy(update={"score": score, "metadata": meta,
                                                 "scores": {**r.scores, "rerank": s.score}}))
        k = min(len(reranked), max(1, req.rerank_top_k))
        st.rerank_result = mmr(reranked, k, passages)
        cm.note("chunk_rerank", candidates=len(candidates), kept=len(st.rerank_result),
                model=reranker.model_id)
        if not st.rerank_result:
            return ERR_SEARCH_NOTHING
        return await next()
