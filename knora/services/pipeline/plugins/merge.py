"""``chunk_merge`` (spec §2.13): the eight steps that turn ranked hits into the passages the model reads.

1 input (rerank result, else search result by score) · 2 dedup · 3 history references · 4 parent chunks ·
5 sequential merge per (document, chunk type) · 6 FAQ answers · 7 short-context expansion with neighbours
(350 → ≤ 850 runes) · 7.5 merge again · 8 dedup + partial-overlap removal.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from knora.domain.knowledge import Chunk
from knora.services.pipeline.deps import PipelineDeps
from knora.services.pipeline.errors import PluginError
from knora.services.pipeline.framework import Next
from knora.services.pipeline.plugins.merge_steps import (
    Item,
    dedup_items,
    faq_content,
    group_and_merge,
    history_items,
    prune_markdown_images,
    remove_partial_overlaps,
    urls_of,
)
from knora.services.pipeline.state import ChatManage, EventType
from knora.services.pipeline.textutil import join_chunk_content
from knora.services.streaming.turn import TurnContext

log = logging.getLogger(__name__)

MIN_CONTEXT = 350
MAX_CONTEXT = 850
IMAGE_TYPES = ("image_ocr", "image_caption")


class _ChunkCache:
    """Batch loads through ``deps.reads`` with a per-turn cache (missing ids cached as None)."""

    def __init__(self, deps: PipelineDeps, tenant_id: int) -> None:
        self._reads = deps.reads
        self._tenant = tenant_id
        self._cache: dict[str, Chunk | None] = {}

    async def load(self, ids: Sequence[str]) -> dict[str, Chunk]:
        missing = [i for i in dict.fromkeys(ids) if i and i not in self._cache]
        if missing and self._reads is not None:
            found = {c.id: c for c in await self._reads.chunks(missing) if c.tenant_id == self._tenant}
            for i in missing:
                self._cache[i] = found.get(i)
        return {i: c for i in ids if (c := self._cache.get(i)) is not None}


async def resolve_parents(items: list[Item], cache: _ChunkCache) -> None:
    """Step 4. Scoped image-info collection through child chunks is not done (see docs/quick-answer.md D6):
    a hit's own image info, filtered to URLs present in the text, decides which images survive."""
    parents = await cache.load([i.r.parent_chunk_id for i in items if i.r.parent_chunk_id])
    grand_ids = [p.parent_chunk_id for i in items if i.r.chunk_type in IMAGE_TYPES
                 and (p := parents.get(i.r.parent_chunk_id)) and p.chunk_type == "text" and p.parent_chunk_id]
    grands = await cache.load([g for g in grand_ids if g])
    for it in items:
        parent = parents.get(it.r.parent_chunk_id)
        if parent is None or not parent.content.strip():
            continue
        if it.r.chunk_type == "text" and parent.chunk_type == "parent_text":
            allowed = {u for u in urls_of(it.r.image_info) if u in it.r.content}
            it.r.content = join_chunk_content(prune_markdown_images(parent.content, allowed), it.r.content, "\n\n")
        elif it.r.chunk_type in IMAGE_TYPES and parent.chunk_type == "text":
            grand = grands.get(parent.parent_chunk_id or "")
            src = grand if grand is not None and grand.chunk_type == "parent_text" and grand.content.strip() \
                else parent
            allowed = {u for u in urls_of(it.r.image_info) if u in parent.content}
            it.r.chunk_index = parent.chunk_index
            it.r.content = join_chunk_content(prune_markdown_images(src.content, allowed),
                                              prune_markdown_images(parent.content, allowed), "\n\n")
        else:
            continue
        it.rewritten = True
        it.add_sub(it.r.id)


async def populate_faq(items: list[Item], cache: _ChunkCache) -> None:
    chunks = await cache.load([i.r.id for i in items if i.r.chunk_type == "faq"])
    for it in items:
        c = chunks.get(it.r.id)
        if c is not None and (text := faq_content(c.metadata or {})) is not None:
            it.r.content = text


async def expand_short(items: list[Item], cache: _ChunkCache) -> None:
    targets = [i for i in items if i.r.chunk_type == "text" and i.r.content and len(i.r.content) < MIN_CONTEXT]
    if not targets:
        return
    bases = await cache.load([i.r.id for i in targets])
    for it in targets:
        base = bases.get(it.r.id)
        if base is None:
            continue
        prev_chunks: list[Chunk] = []
        next_chunks: list[Chunk] = []
        cursors: dict[str, str | None] = {"prev": base.pre_chunk_id, "next": base.next_chunk_id}

        async def step(side: str) -> bool:
            cid = cursors[side]
            c = (await cache.load([cid])).get(cid) if cid else None
            if c is None or c.knowledge_id != base.knowledge_id:
                cursors[side] = None
                return False
            if side == "prev":
                prev_chunks.insert(0, c)
                cursors[side] = c.pre_chunk_id
            else:
                next_chunks.append(c)
                cursors[side] = c.next_chunk_id
            return True

        await step("prev")
        await step("next")
        merged = _ordered(prev_chunks, base, next_chunks)
        for _ in range(256):  # bounded walk; each round adds at most one chunk per side
            if not merged or len(merged) >= MIN_CONTEXT or (cursors["prev"] is None and cursors["next"] is None):
                break
            grew = await step("prev")
            merged = _ordered(prev_chunks, base, next_chunks)
            if len(merged) >= MIN_CONTEXT:
                break
            grew = await step("next") or grew
            merged = _ordered(prev_chunks, base, next_chunks)
            if not grew:
                break
        prev_ids = [c.id for c in prev_chunks]
        next_ids = [c.id for c in next_chunks]
        if prev_ids or next_ids:
            it.r.content = merged
            it.rewritten = True
            for cid in [*prev_ids, *next_ids]:
                it.add_sub(cid)


def _ordered(prev: Sequence[Chunk], base: Chunk, nxt: Sequence[Chunk]) -> str:
    text = base.content
    for p in reversed(prev):
        text = join_chunk_content(p.content, text, "\n\n")
    for n in nxt:
        text = join_chunk_content(text, n.content, "\n\n")
    return text[:MAX_CONTEXT]


class ChunkMerge:
    def __init__(self, deps: PipelineDeps) -> None:
        self._deps = deps

    def activation_events(self) -> Sequence[EventType]:
        return (EventType.CHUNK_MERGE,)

    async def on_event(self, ctx: TurnContext, event_type: EventType, cm: ChatManage,
                       next: Next) -> PluginError | None:
        if not cm.needs_retrieval:
            return await next()
        st = cm.state
        source = st.rerank_result or sorted(st.search_result, key=lambda r: -r.score)  # step 1
        items = dedup_items([Item.of(r) for r in source])  # step 2
        present = {i.r.id for i in items}
        items = dedup_items([*items, *history_items(st.history, present, cm.search_query)])  # step 3
        if not items:
            st.merge_result = []
            cm.note("chunk_merge", kept=0)
            return await next()
        cache = _ChunkCache(self._deps, cm.request.tenant_id)
        try:
            await resolve_parents(items, cache)  # step 4
        except Exception as exc:  # noqa: BLE001 - enrichment is best effort; the hits themselves stand
            log.warning("parent resolution failed: %s", exc)
        items = group_and_merge(items)  # step 5
        try:
            await populate_faq(items, cache)  # step 6
            await expand_short(items, cache)  # step 7
        except Exception as exc:  # noqa: BLE001
            log.warning("merge enrichment failed: %s", exc)
        items = group_and_merge(items)  # step 7.5
        items = remove_partial_overlaps(dedup_items(items))  # step 8
        st.merge_result = [i.result() for i in items]
        cm.note("chunk_merge", input=len(source), kept=len(st.merge_result))
        return await next()
