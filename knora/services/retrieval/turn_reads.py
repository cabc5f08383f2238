"""A ``SearchStore`` view for one request: each knowledge base, chunk and document row and the tenant's
retrieval config is read at most once, however many stages ask for it.

A quick-answer turn used to read its KBs three times (request assembly, target grouping, search scope), the
hit chunks twice (hydration, merge) and the documents once more; each read is a session and a thread hop (~1–4
ms on a loaded machine). The view lives exactly as long as the turn and is never shared between turns, so no
invalidation is needed: an edit made while a turn runs is seen by the next turn, as before, and within one
turn every stage sees the same rows. Objects are shared between callers — they must not be mutated (none are).

Ids that were asked for and not found are remembered as missing, like the merge step's cache did.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from knora.domain.knowledge import Chunk, Knowledge, KnowledgeBase
from knora.ports.search_store import SearchStore

T = TypeVar("T")


class TurnReads:
    """``tenant_id``: the request's tenant, whose retrieval config is then read with the first KB read.
    ``neighbours_below``: with hit chunks, also read the neighbours of text chunks shorter than this (the chat
    pipeline's merge lengthens those passages with them next)."""

    def __init__(self, store: SearchStore, *, tenant_id: int | None = None,
                 neighbours_below: int = 0) -> None:
        self.store = store
        self._tenant_id = tenant_id
        self._neighbours_below = neighbours_below
        self._kbs: dict[str, KnowledgeBase | None] = {}
        self._chunks: dict[str, Chunk | None] = {}
        self._knowledge: dict[str, Knowledge | None] = {}
        self._tenant_config: dict[int, dict[str, Any]] = {}

    @staticmethod
    def _wanted(ids: Sequence[str], cache: dict[str, Any]) -> list[str]:
        return [i for i in dict.fromkeys(ids) if i and i not in cache]

    @staticmethod
    def _remember(cache: dict[str, T | None], asked: Sequence[str], found: Sequence[Any]) -> None:
        by_id = {x.id: x for x in found}
        for i in asked:
            cache[i] = by_id.get(i)

    @staticmethod
    def _pick(cache: dict[str, T | None], ids: Sequence[str]) -> list[T]:
        return [x for i in dict.fromkeys(ids) if (x := cache.get(i)) is not None]

    def remember_chunks(self, chunks: Sequence[Chunk]) -> None:
        for c in chunks:
            self._chunks[c.id] = c

    def remember_knowledge(self, docs: Sequence[Knowledge]) -> None:
        for k in docs:
            self._knowledge[k.id] = k

    async def knowledge_bases(self, kb_ids: Sequence[str]) -> list[KnowledgeBase]:
        if missing := self._wanted(kb_ids, self._kbs):
            both = getattr(self.store, "knowledge_bases_with_tenant_config", None)
            if (both is not None and self._tenant_id is not None
                    and self._tenant_id not in self._tenant_config):
                kbs, self._tenant_config[self._tenant_id] = await both(missing, self._tenant_id)
            else:
                kbs = await self.store.knowledge_bases(missing)
            self._remember(self._kbs, missing, kbs)
        return self._pick(self._kbs, kb_ids)

    async def shared_kb_ids(self, tenant_id: int, kb_ids: Sequence[str]) -> set[str]:
        return await self.store.shared_kb_ids(tenant_id, kb_ids)

    async def tenant_retrieval_config(self, tenant_id: int) -> dict[str, Any]:
        if tenant_id not in self._tenant_config:
            self._tenant_config[tenant_id] = await self.store.tenant_retrieval_config(tenant_id)
        return dict(self._tenant_config[tenant_id])

    async def chunks(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        if missing := self._wanted(chunk_ids, self._chunks):
            self._remember(self._chunks, missing, await self.store.chunks(missing))
        return self._pick(self._chunks, chunk_ids)

    async def knowledge(self, knowledge_ids: Sequence[str]) -> list[Knowledge]:
        if missing := self._wanted(knowledge_ids, self._knowledge):
            self._remember(self._knowledge, missing, await self.store.knowledge(missing))
        return self._pick(self._knowledge, knowledge_ids)

    async def chunks_with_knowledge(self, chunk_ids: Sequence[str]) -> tuple[list[Chunk], list[Knowledge]]:
        """The chunks and their documents, in one read when the store offers it (hydration's two reads)."""
        missing = self._wanted(chunk_ids, self._chunks)
        joined = getattr(self.store, "chunks_with_knowledge", None)
        if missing and joined is not None:
            if self._neighbours_below > 0:
                chunks, docs = await joined(missing, neighbours_below=self._neighbours_below)
            else:
                chunks, docs = await joined(missing)
            self.remember_chunks(chunks)  # neighbours included
            self._remember(self._chunks, missing, chunks)
            self.remember_knowledge(docs)
            asked = set(missing)
            for c in chunks:  # an asked-for chunk whose document is gone: do not ask again
                if c.id in asked:
                    self._knowledge.setdefault(c.knowledge_id, None)
        found = await self.chunks(chunk_ids)
        return found, await self.knowledge([c.knowledge_id for c in found])

    # Not cached (tag scopes are rare and cheap): passed through.
    async def knowledge_ids_with_tags(self, kb_id: str, tag_ids: Sequence[str]) -> list[str]:
        return await self.store.knowledge_ids_with_tags(kb_id, tag_ids)

    async def tag_kbs(self, tag_ids: Sequence[str]) -> dict[str, str]:
        return await self.store.tag_kbs(tag_ids)
