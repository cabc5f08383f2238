"""The pure steps of ``chunk_merge`` (spec §2.13): history injection, sequential merging, overlap removal.

Work happens on ``Item``s — a mutable copy of a SearchResult plus the ``rewritten`` flag WeKnora keeps as
``ContentRewritten`` (a rewritten text no longer matches its offsets, so offset-based merging must not trust
it).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from knora.domain.document import same_location
from knora.domain.search import MatchType, SearchResult
from knora.ports.turn import HistoryTurn
from knora.services.pipeline.plugins.merge_spans import SourcePart, parts_of, spans_for
from knora.services.pipeline.textutil import (
    MARKDOWN_IMAGE,
    append_with_exact_overlap,
    append_with_overlap,
    contains_chunk_content,
    content_overlap_ratio,
    jaccard,
    join_chunk_content,
    normalize_content,
    remove_duplicate_results,
    sort_key,
    tokenize_simple,
    utf8_len,
)

log = logging.getLogger(__name__)

HISTORY_MIN_SIMILARITY = 0.15
HISTORY_SCORE_FACTOR = 0.6
HISTORY_MAX = 3
OVERLAP_DROP = 0.85


@dataclass
class Item:
    r: SearchResult
    rewritten: bool = False
    sub_ids: list[str] = field(default_factory=list)
    parts: list[SourcePart] = field(default_factory=list)  # the chunks the passage is made of (spans)

    @staticmethod
    def of(r: SearchResult) -> Item:
        """A copy the merge may rewrite: fields are only ever reassigned, never changed in place, so a shallow
        copy with its own containers is enough (a deep copy of every hit's metadata cost ~1 ms per turn)."""
        return Item(r=r.model_copy(update={
            "metadata": dict(r.metadata), "scores": dict(r.scores), "sub_chunk_id": list(r.sub_chunk_id),
            "chunk_metadata": dict(r.chunk_metadata) if r.chunk_metadata is not None else None}),
            sub_ids=list(r.sub_chunk_id), parts=parts_of(r))

    def result(self) -> SearchResult:
        return self.r.model_copy(update={"sub_chunk_id": list(dict.fromkeys(self.sub_ids)),
                                         "spans": spans_for(self.r, self.parts)})

    def add_sub(self, chunk_id: str) -> None:
        if chunk_id and chunk_id not in self.sub_ids:
            self.sub_ids.append(chunk_id)


def dedup_items(items: Sequence[Item]) -> list[Item]:
    keep = {id(r) for r in remove_duplicate_results(i.r for i in items)}
    return [i for i in items if id(i.r) in keep]


def _fmt_similarity(v: float) -> str:
    return f"{v:.4f}".rstrip("0").rstrip(".") or "0"


def history_items(history: Sequence[HistoryTurn], present: set[str], query: str) -> list[Item]:
    """Step 3: references of the most recent round that has any, similar enough to the query, weakened."""
    refs: list[dict[str, Any]] = []
    for turn in reversed(history):
        if turn.references:
            refs = turn.references
            break
    q_tokens = tokenize_simple(query)
    out: list[Item] = []
    for raw in refs:
        try:
            ref = SearchResult.model_validate(raw)
        except Exception as exc:  # noqa: BLE001 - a malformed stored reference is skipped
            log.debug("skipping malformed history reference: %s", exc)
            continue
        if ref.id in present:
            continue
        sim = jaccard(q_tokens, tokenize_simple(ref.content))
        if sim < HISTORY_MIN_SIMILARITY:
            continue
        ref = ref.model_copy(update={"match_type": MatchType.HISTORY,
                                     "score": ref.score * HISTORY_SCORE_FACTOR,
                                     "metadata": {**ref.metadata,
                                                  "history_similarity": _fmt_similarity(sim)}})
        out.append(Item.of(ref))
        if len(out) >= HISTORY_MAX:
            break
    return out


def _trusted(i: Item) -> bool:
    r = i.r
    return not i.rewritten and r.end_at > r.start_at and len(r.content) == r.end_at - r.start_at


def _merge_images(target: Item, source: Item) -> None:
    def load(s: str) -> list[dict[str, Any]]:
        try:
            v = json.loads(s) if s else []
        except json.JSONDecodeError:
            return []
        return [x for x in v if isinstance(x, dict)] if isinstance(v, list) else []

    merged: dict[str, dict[str, Any]] = {}
    for info in [*load(target.r.image_info), *load(source.r.image_info)]:
        url = info.get("url") or info.get("original_url")
        if url and url not in merged:
            merged[url] = info
    if merged:
        target.r.image_info = json.dumps(list(merged.values()), ensure_ascii=False)


def merge_sequential(group: Sequence[Item]) -> list[Item]:
    """Step 5 for one (knowledge, chunk type) group sorted by chunk index."""
    out: list[Item] = []
    leader: Item | None = None
    last_index = 0
    for cur in group:
        if leader is None:
            leader, last_index = cur, cur.r.chunk_index
            out.append(leader)
            continue
        lr, cr = leader.r, cur.r
        action = "separate"
        if not same_location(lr.chunk_metadata or {}, cr.chunk_metadata or {}):
            pass  # another page, slide or attachment: a passage of its own, cited there
        elif _trusted(leader) and _trusted(cur) and cr.start_at >= lr.start_at:
            if cr.start_at > lr.end_at:
                action = "separate"
            elif cr.end_at > lr.end_at:
                action = "extend"
            elif contains_chunk_content(lr.content, cr.content):
                action = "subsume"
            else:
                action = "join"
        elif (contains_chunk_content(lr.content, cr.content) or contains_chunk_content(cr.content, lr.content)
              or cr.chunk_index == last_index + 1):
            action = "join"
        if action == "separate":
            leader, last_index = cur, cur.r.chunk_index
            out.append(leader)
            continue
        if action == "extend":
            joined = append_with_exact_overlap(lr.content, cr.content, lr.end_at - cr.start_at)
            lr.content = joined if joined is not None else append_with_overlap(lr.content, cr.content,
                                                                                lr.end_at - cr.start_at)
            lr.end_at = cr.end_at
        elif action == "join":
            lr.content = join_chunk_content(lr.content, cr.content, "\n\n")
            leader.rewritten = True
        leader.add_sub(cr.id)
        leader.parts.extend(cur.parts)
        for sub in cur.sub_ids:
            leader.add_sub(sub)
        _merge_images(leader, cur)
        last_index = max(last_index, cr.chunk_index)
        lr.score = max(lr.score, cr.score)
    out.sort(key=lambda i: -i.r.score)
    return out


def group_and_merge(items: Iterable[Item]) -> list[Item]:
    groups: dict[tuple[str, str], list[Item]] = {}
    for i in items:
        groups.setdefault((i.r.knowledge_id, i.r.chunk_type), []).append(i)
    merged: list[Item] = []
    for members in groups.values():
        members.sort(key=lambda i: (i.r.chunk_index, i.r.id))
        merged.extend(merge_sequential(members))
    merged.sort(key=lambda i: sort_key(i.r))
    return merged


def remove_partial_overlaps(items: Sequence[Item]) -> list[Item]:
    """Step 8b: of two overlapping results drop the shorter, unless it scores strictly higher."""
    removed: set[int] = set()
    norms = [normalize_content(i.r.content) for i in items]
    for a in range(len(items)):
        if a in removed:
            continue
        for b in range(a + 1, len(items)):
            if b in removed or a in removed:
                continue
            short, long = (b, a) if utf8_len(norms[a]) > utf8_len(norms[b]) else (a, b)
            if not (norms[short] and norms[short] in norms[long]) and \
                    content_overlap_ratio(items[short].r.content, items[long].r.content) < OVERLAP_DROP:
                continue
            victim = long if items[short].r.score > items[long].r.score else short
            removed.add(victim)
    return [i for n, i in enumerate(items) if n not in removed]


def faq_content(meta: dict[str, Any]) -> str | None:
    """Step 6: ``Q: …\\nAnswer:\\n- a1\\n- a2`` from FAQ chunk metadata; None when there is nothing to
    show."""
    question = str(meta.get("standard_question") or "").strip()
    answers = [a.strip() for a in meta.get("answers") or [] if isinstance(a, str) and a.strip()]
    if not question and not answers:
        return None
    lines = [f"Q: {question}"] if question else []
    lines.append("Answer:")
    lines.extend(f"- {a}" for a in answers)
    return "\n".join(lines).strip()


def prune_markdown_images(text: str, allowed_urls: set[str]) -> str:
    """Keep only Markdown images whose URL is in ``allowed_urls`` (none when empty); collapse blank lines."""
    pruned = MARKDOWN_IMAGE.sub(lambda m: m.group(0) if m.group(2).strip() in allowed_urls else "", text)
    return re.sub(r"\n{3,}", "\n\n", pruned)


def urls_of(image_info: str) -> set[str]:
    try:
        v = json.loads(image_info) if image_info else []
    except json.JSONDecodeError:
        return set()
    out: set[str] = set()
    for x in v if isinstance(v, list) else []:
        if isinstance(x, dict):
            out.update(u for u in (x.get("url"), x.get("original_url")) if isinstance(u, str) and u)
    return out
