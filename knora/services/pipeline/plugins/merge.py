"""``chunk_merge`` (spec §2.13): the eight steps that turn ranked hits into the passages the model reads.

1 input (rerank result, else search result by score) · 2 dedup · 3 history references · 4 parent chunks ·
5 sequential merge per (document, chunk type) · 6 FAQ answers · 7 short-context expansion with neighbours
(350 → ≤ 850 runes) · 7.5 merge again · 8 dedup + partial-overlap removal.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from knora.domain.document import same_location
from knora.domain.knowledge import Chunk
from knora.ports.turn import TurnContext
from knora.services.pipeline.deps import PipelineDeps, Reads
from knora.services.pipeline.errors import PluginError
from knora.services.pipeline.framework import Next
from knora.services.pipeline.plugins.merge_spans import part_of_chunk
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

log = logging.getLogger(__name__)

MIN_CONTEXT = 350
MAX_CONTEXT = 850
IMAGE_TYPES = ("image_ocr", "image_caption")


class _ChunkCache:
    """Batch loads through the turn's reads with a cache (missing ids cached as None)."""

    def __init__(self, reads: Reads | None, tenant_id: int) -> None:
        self._reads = reads
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
            it.r.content = join_chunk_content(prune_markdown_images(parent.content, allowed), it.r.content,
                                              "\n\n")
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


@dataclass
class _Expansion:
    item: Item
    base: Chunk
    prev: list[Chunk] = field(default_factory=list)
    next: list[Chunk] = field(default_factory=list)
    prev_cursor: str | None = None
    next_cursor: str | None = None
    merged: str = ""
    done: bool = False

    def take(self, side: str, found: dict[str, Chunk]) -> bool:
        cid = self.prev_cursor if side == "prev" else self.next_cursor
        c = found.get(cid) if cid else None
        if (c is None or c.knowledge_id != self.base.knowledge_id
                or not same_location(c.metadata, self.base.metadata)):
            if side == "prev":
                self.prev_cursor = None
            else:
                self.next_cursor = None
            return False
        if side == "prev":
            self.prev.insert(0, c)
            self.prev_cursor = c.pre_chunk_id
        else:
            self.next.append(c)
            self.next_cursor = c.next_chunk_id
        self.merged = _ordered(self.prev, self.base, self.next)
        return True


async def expand_short(items: list[Item], cache: _ChunkCache) -> None:
    """Step 7. All short results advance together, one batched read per round (a round adds at most one
    neighbour per side), so the cost is a few queries per turn instead of a few per result."""
    targets = [i for i in items
               if i.r.chunk_type == "text" and i.r.content and len(i.r.content) < MIN_CONTEXT]
    if not targets:
        return
    bases = await cache.load([i.r.id for i in targets])
    work = [_Expansion(item=i, base=b, prev_cursor=b.pre_chunk_id, next_cursor=b.next_chunk_id,
                       merged=b.content)
            for i in targets if (b := bases.get(i.r.id)) is not None]
    first = True
    for _ in range(256):  # bounded walk
        active = [w for w in work if not w.done]
        if not active:
            break
        found = await cache.load([c for w in active for c in (w.prev_cursor, w.next_cursor) if c])
        for w in active:
            if first:  # start with one neighbour on each side
                w.take("prev", found)
                w.take("next", found)
            else:
                grew = w.take("prev", found)
                if len(w.merged) < MIN_CONTEXT:
                    grew = w.take("next", found) or grew
                if not grew:
                    w.done = True
            if (not w.merged or len(w.merged) >= MIN_CONTEXT
                    or (w.prev_cursor is None and w.next_cursor is None)):
                w.done = True
        first = False
    for w in work:
        if w.prev or w.next:
            w.item.r.content = w.merged
            w.item.rewritten = True
            w.item.parts = [*map(part_of_chunk, w.prev), *w.item.parts, *map(part_of_chunk, w.next)]
            for c in [*w.prev, *w.next]:
                w.item.add_sub(c.id)


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
        cache = _ChunkCache(cm.reads_or(self._deps.reads), cm.request.tenant_id)
        try:
            # One read for everything later steps need (parents, FAQ rows, bases of short texts); a turn whose
            # hits are long plain texts reads nothing.
            needed = [i.r.parent_chunk_id for i in items if i.r.parent_chunk_id]
            needed += [i.r.id for i in items if i.r.chunk_type == "faq" or (
                i.r.chunk_type == "text" and len(i.r.content) < MIN_CONTEXT)]
            await cache.load(needed)
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
