"""FAQ entries (spec §9.4, weknora-api "FAQ entries"): CRUD, bulk import, and FAQ search.

An entry is one ``faq`` chunk; it is indexed for vector search only (FAQ KBs have no keyword path, spec §3.2),
in "combined" mode as one row, in "separate" mode as one row per question, all pointing back at the chunk.
Negative questions never enter the content or the index; HybridSearch filters on them (spec §3.6).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

from knora.domain.errors import BadRequest, NotFound, ValidationFailed
from knora.domain.knowledge import Chunk, ChunkType, FAQConfig, KBType, KnowledgeBase
from knora.domain.search import IndexRow, SearchParams, SearchResult
from knora.ports.faq_store import FaqRepo
from knora.ports.retrieval import RetrievalEngine
from knora.services.ingest.embedders import EmbedderRegistry
from knora.services.retrieval.hybrid import HybridSearch


class FaqEntryIn(BaseModel):
    standard_question: str
    similar_questions: list[str] = Field(default_factory=list)
    negative_questions: list[str] = Field(default_factory=list)
    answers: list[str] = Field(default_factory=list)
    answer_strategy: Literal["all", "random"] = "all"
    tag_id: str | None = None
    is_enabled: bool = True
    is_recommended: bool = True

    @field_validator("tag_id", mode="before")
    @classmethod
    def _tag(cls, v: Any) -> Any:
        return None if v in (None, "", 0) else str(v)

    def cleaned(self) -> FaqEntryIn:
        std = self.standard_question.strip()
        if not std:
            raise ValidationFailed("standard_question must not be empty")

        def uniq(items: Sequence[str]) -> list[str]:
            return list(dict.fromkeys(s.strip() for s in items if s and s.strip()))

        similar = [q for q in uniq(self.similar_questions) if q.lower() != std.lower()]
        return self.model_copy(update={"standard_question": std, "similar_questions": similar,
                                       "negative_questions": uniq(self.negative_questions),
                                       "answers": uniq(self.answers)})


def render(entry: FaqEntryIn, cfg: FAQConfig) -> str:
    parts = [f"Q: {entry.standard_question}\n"]
    if entry.similar_questions:
        parts.append("Similar Questions:\n" + "".join(f"- {q}\n" for q in entry.similar_questions))
    if cfg.index_mode == "question_answer" and entry.answers:
        parts.append("Answers:\n" + "".join(f"- {a}\n" for a in entry.answers))
    return "".join(parts).strip()


def index_texts(entry: FaqEntryIn, cfg: FAQConfig) -> list[str]:
    """Index rows' texts: combined = one; separate = standard question (+answers) then one per similar
    question."""
    answers = entry.answers if cfg.index_mode == "question_answer" else []
    if cfg.question_index_mode == "separate":
        return ["\n".join([entry.standard_question, *answers]), *entry.similar_questions]
    return ["\n".join([entry.standard_question, *entry.similar_questions, *answers])]


def entry_json(c: Chunk) -> dict[str, Any]:
    m = c.metadata or {}
    return {"id": c.chunk_index, "chunk_id": c.id, "knowledge_id": c.knowledge_id,
            "knowledge_base_id": c.knowledge_base_id, "standard_question": m.get("standard_question", ""),
            "similar_questions": m.get("similar_questions", []),
            "negative_questions": m.get("negative_questions", []),
            "answers": m.get("answers", []), "answer_strategy": m.get("answer_strategy", "all"),
            "tag_id": c.tag_id or 0, "tag_name": m.get("tag_name", ""), "is_enabled": c.is_enabled,
            "is_recommended": bool(m.get("is_recommended", True)), "created_at": c.created_at,
            "updated_at": c.updated_at}


def entry_of(c: Chunk) -> FaqEntryIn:
    """The entry a stored ``faq`` chunk holds (its metadata, its tag and enabled flag)."""
    m = c.metadata or {}
    return FaqEntryIn(standard_question=m.get("standard_question", ""),
                      similar_questions=m.get("similar_questions", []),
                      negative_questions=m.get("negative_questions", []), answers=m.get("answers", []),
                      answer_strategy=m.get("answer_strategy", "all"), tag_id=c.tag_id,
                      is_enabled=c.is_enabled, is_recommended=bool(m.get("is_recommended", True)))


class FaqService:
    def __init__(self, repo: FaqRepo, search: HybridSearch, engine: Callable[[], RetrievalEngine],
                 embedders: EmbedderRegistry) -> None:
        self.repo = repo
        self.search_service = search
        self.engine = engine
        self.embedders = embedders
        self.tasks: dict[str, dict[str, Any]] = {}
        self._lock = asyncio.Lock()

    async def kb(self, tenant_id: int, kb_id: str) -> KnowledgeBase:
        kbs = await self.search_service.store.knowledge_bases([kb_id])
        if not kbs or kbs[0].tenant_id != tenant_id:
            raise NotFound("knowledge base not found")
        if kbs[0].type != KBType.FAQ:
            raise BadRequest("knowledge base is not an FAQ knowledge base")
        return kbs[0]

    async def _index(self, kb: KnowledgeBase, chunks: Sequence[Chunk], entries: Sequence[FaqEntryIn]) -> None:
        cfg = kb.faq_config or FAQConfig()
        texts: list[tuple[Chunk, FaqEntryIn, int, str]] = []
        for c, e in zip(chunks, entries, strict=True):
            for i, t in enumerate(index_texts(e, cfg)):
                texts.append((c, e, i, t))
        engine = self.engine()
        await engine.delete_chunks([c.id for c in chunks])
        if not texts or not kb.indexing_strategy.vector_enabled:
            return
        embedder = await self.embedders.get(kb.embedding_model_id or None, tenant_id=kb.tenant_id)
        vectors = await embedder.embed_passages([t for *_, t in texts])
        rows = [IndexRow(source_id=c.id if i == 0 else f"{c.id}-{i}", chunk_id=c.id,
                         knowledge_id=c.knowledge_id,
                         knowledge_base_id=kb.id, tenant_id=kb.tenant_id, content=t,
                         embedding=vectors[n].tolist(),
                         tag_id=c.tag_id, is_enabled=c.is_enabled, is_recommended=e.is_recommended,
                         knowledge_type="faq")
                for n, (c, e, i, t) in enumerate(texts)]
        await engine.index(rows)

    async def _check_unique(self, tenant_id: int, kb: KnowledgeBase, entries: Sequence[FaqEntryIn],
                            replacing: set[str]) -> None:
        taken: dict[str, str] = {}
        for c in await self.repo.all(tenant_id, kb.id):
            if c.id in replacing:
                continue
            for q in (c.metadata or {}).get("similar_questions", []):
                taken[q.lower()] = c.id
        for e in entries:
            for q in e.similar_questions:
                if q.lower() in taken:
                    raise ValidationFailed(f"similar question {q!r} is already used by another FAQ entry")
                taken[q.lower()] = "new"

    def _chunk(self, kb: KnowledgeBase, knowledge_id: str, seq: int, e: FaqEntryIn,
               cid: str | None = None) -> Chunk:
        cfg = kb.faq_config or FAQConfig()
        meta = {"standard_question": e.standard_question, "similar_questions": e.similar_questions,
                "negative_questions": e.negative_questions, "answers": e.answers,
                "answer_strategy": e.answer_strategy, "is_recommended": e.is_recommended, "source": "api"}
        return Chunk(id=cid or str(uuid.uuid4()), tenant_id=kb.tenant_id, knowledge_base_id=kb.id,
                     knowledge_id=knowledge_id, tag_id=e.tag_id, content=render(e, cfg), chunk_index=seq,
                     chunk_type=ChunkType.FAQ, is_enabled=e.is_enabled, metadata=meta,
                     end_at=len(render(e, cfg)))

    # --- CRUD -----------------------------------------------------------------------------------------------
    async def create(self, tenant_id: int, kb_id: str, entry: FaqEntryIn,
                     knowledge_id: str | None = None) -> dict[str, Any]:
        return (await self.upsert(tenant_id, kb_id, [entry], knowledge_id=knowledge_id))[0]

    async def upsert(self, tenant_id: int, kb_id: str, entries: Sequence[FaqEntryIn], *, mode: str = "append",
                     knowledge_id: str | None = None) -> list[dict[str, Any]]:
        kb = await self.kb(tenant_id, kb_id)
        clean = [e.cleaned() for e in entries]
        async with self._lock:  # seq ids are allocated per KB; one writer at a time in this process
            if mode == "replace":
                gone = await self.repo.delete(tenant_id, kb.id, None)
                await self.engine().delete_chunks(gone)
            holder = await self.repo.holder(tenant_id, kb.id, knowledge_id)
            await self._check_unique(tenant_id, kb, clean, set())
            seq = await self.repo.next_seq(kb.id)
            chunks = [self._chunk(kb, holder.id, seq + i, e) for i, e in enumerate(clean)]
            await self.repo.save(chunks)
        await self._index(kb, chunks, clean)
        return [entry_json(c) for c in chunks]

    async def list_entries(self, tenant_id: int, kb_id: str, *, page: int, page_size: int, keyword: str = "",
                   tag_id: str | None = None) -> tuple[list[dict[str, Any]], int]:
        kb = await self.kb(tenant_id, kb_id)
        page, page_size = max(page, 1), min(max(page_size, 1), 1000)
        items, total = await self.repo.page(tenant_id, kb.id, page=page, page_size=page_size, keyword=keyword,
                                            tag_id=tag_id)
        return [entry_json(c) for c in items], total

    async def get(self, tenant_id: int, kb_id: str, seq_id: int) -> dict[str, Any]:
        kb = await self.kb(tenant_id, kb_id)
        c = await self.repo.get(tenant_id, kb.id, seq_id)
        if c is None:
            raise NotFound("FAQ entry not found")
        return entry_json(c)

    async def update(self, tenant_id: int, kb_id: str, seq_id: int, entry: FaqEntryIn) -> dict[str, Any]:
        kb = await self.kb(tenant_id, kb_id)
        e = entry.cleaned()
        async with self._lock:
            old = await self.repo.get(tenant_id, kb.id, seq_id)
            if old is None:
                raise NotFound("FAQ entry not found")
            await self._check_unique(tenant_id, kb, [e], {old.id})
            c = self._chunk(kb, old.knowledge_id, seq_id, e, cid=old.id)
            await self.repo.save([c])
        await self._index(kb, [c], [e])
        return entry_json(c)

    async def delete(self, tenant_id: int, kb_id: str, seq_ids: Sequence[int]) -> int:
        kb = await self.kb(tenant_id, kb_id)
        gone = await self.repo.delete(tenant_id, kb.id, list(seq_ids))
        await self.engine().delete_chunks(gone)
        return len(gone)

    async def rewrite(self, tenant_id: int, kb: KnowledgeBase,
                      change: Callable[[Chunk, FaqEntryIn], FaqEntryIn | None]) -> int:
        """Every entry of ``kb`` that ``change`` returns a new version of is saved and re-indexed (the index
        rows carry the tag and the flags); the number changed."""
        async with self._lock:
            changed: list[tuple[Chunk, FaqEntryIn]] = []
            for old in await self.repo.all(tenant_id, kb.id):
                new = change(old, entry_of(old))
                if new is not None:
                    changed.append((self._chunk(kb, old.knowledge_id, old.chunk_index, new, cid=old.id), new))
            await self.repo.save([c for c, _ in changed])
        await self._index(kb, [c for c, _ in changed], [e for _, e in changed])
        return len(changed)

    # --- import ---------------------------------------------------------------------------------------------
    async def start_import(self, tenant_id: int, kb_id: str, entries: Sequence[FaqEntryIn], *, mode: str,
                           knowledge_id: str | None = None, dry_run: bool = False) -> str:
        await self.kb(tenant_id, kb_id)
        if mode not in ("append", "replace"):
            raise ValidationFailed("mode must be 'append' or 'replace'")
        clean = [e.cleaned() for e in entries]  # validation errors surface now, not in the poll
        task_id = str(uuid.uuid4())
        self.tasks[task_id] = {"task_id": task_id, "tenant_id": tenant_id, "status": "running",
                               "total": len(clean), "processed": 0, "success": 0, "failed": 0, "error": ""}
        if dry_run:
            self.tasks[task_id].update(status="completed", processed=len(clean), success=len(clean))
            return task_id

        async def run() -> None:
            t = self.tasks[task_id]
            try:
                await self.upsert(tenant_id, kb_id, clean, mode=mode, knowledge_id=knowledge_id)
                t.update(status="completed", processed=len(clean), success=len(clean))
            except Exception as exc:  # noqa: BLE001 - the poller reads the failure
                t.update(status="failed", processed=len(clean), failed=len(clean), error=str(exc))

        self.tasks[task_id]["_task"] = asyncio.create_task(run())
        return task_id

    def progress(self, tenant_id: int, task_id: str) -> dict[str, Any]:
        t = self.tasks.get(task_id)
        if t is None or t["tenant_id"] != tenant_id:
            raise NotFound("import task not found")
        return {k: v for k, v in t.items() if not k.startswith("_") and k != "tenant_id"}

    # --- search ---------------------------------------------------------------------------------------------
    async def search(self, tenant_id: int, kb_id: str, query_text: str, *,
                     vector_threshold: float | None = None,
                     match_count: int = 10, first_priority_tag_ids: Sequence[str] = (),
                     second_priority_tag_ids: Sequence[str] = (), only_recommended: bool = False
                     ) -> list[SearchResult]:
        await self.kb(tenant_id, kb_id)
        match_count = min(max(match_count, 1), 200)
        results = await self.search_service.search(tenant_id, SearchParams(
            knowledge_base_id=kb_id, query_text=query_text, vector_threshold=vector_threshold,
            match_count=match_count, only_recommended=only_recommended, skip_context_enrichment=True))
        first, second = {str(t) for t in first_priority_tag_ids}, {str(t) for t in second_priority_tag_ids}
        if not first and not second:
            return results
        tags = {c.id: c.tag_id for c in await self.search_service.store.chunks([r.id for r in results])}

        def tier(r: SearchResult) -> int:
            tag = tags.get(r.id)
            return 0 if tag in first else 1 if tag in second else 2

        return sorted(results, key=tier)
