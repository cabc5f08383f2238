"""One evaluation run: a knowledge base holding the corpus, every judged query through the real hybrid
search, and (where the set has answers) every answered query through a real quick-answer turn.

The knowledge base is a scratch one, ingested from the corpus and deleted afterwards unless ``keep``, or an
existing one (``knowledge_base_id``). In a scratch KB each document remembers its corpus id; in an existing
KB a document maps to a corpus id by, in this order, its metadata ``corpus_id``, its title, or its file name
without the extension (so a folder of ``<_id>.txt`` files ingested with ``knora ingest`` is evaluable).
Chunks rank as their document: a document's first (best) chunk gives its rank, later ones are dropped.
Documents that map to nothing still take their place in the ranking, as misses.
"""

from __future__ import annotations

import asyncio
import re
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import PurePosixPath

from knora.domain.errors import AppError, BadRequest
from knora.domain.knowledge import KnowledgeBase, ParseStatus
from knora.domain.models import AgentConfig
from knora.domain.search import SearchParams, SearchResult
from knora.ports.chat import ChatModel, ChatModels, ModelError
from knora.ports.reranker import Reranker, Rerankers
from knora.ports.store import KnowledgeRepo
from knora.ports.turn import TurnContext, TurnRequest, TurnRunner
from knora.services.citations.registry import ReferenceRegistry
from knora.services.evaluation import metrics
from knora.services.evaluation.dataset import Dataset
from knora.services.evaluation.judge import judge_faithfulness
from knora.services.evaluation.options import EvalOptions
from knora.services.evaluation.report import AnswerSummary, EvalReport, QueryResult
from knora.services.ingest.embedders import BUILTIN_EMBEDDING_MODEL_ID
from knora.services.ingest.passages import NewPassage
from knora.services.ingest.service import IngestService
from knora.services.kb.service import KnowledgeBaseService
from knora.services.retrieval.hybrid import HybridSearch
from knora.services.streaming.bus import EventBus

Progress = Callable[[str, int, int], None]  # (stage, done, total): "indexing", "searching", "answering"
_CITED = re.compile(r'<ref\s+id="([cC]\d+)"\s*/?>')
CORPUS_ID = "corpus_id"
INGEST_TIMEOUT_S = 3600.0


def _no_progress(stage: str, done: int, total: int) -> None:
    return None


@dataclass(frozen=True)
class EvaluationDeps:
    kbs: KnowledgeBaseService
    ingest: IngestService
    knowledge: KnowledgeRepo
    search: HybridSearch
    quick_answer: TurnRunner
    chat_models: ChatModels
    rerankers: Rerankers
    default_embedder: Callable[[], str]


class EvaluationRunner:
    def __init__(self, deps: EvaluationDeps) -> None:
        self.d = deps

    async def run(self, tenant_id: int, ds: Dataset, opts: EvalOptions,
                  progress: Progress = _no_progress) -> EvalReport:
        started, t0 = datetime.now(UTC), time.perf_counter()
        ds = ds.limited(opts.limit)
        reranker, model = await self.check(tenant_id, ds, opts)
        scratch = not opts.knowledge_base_id
        kb = await (self._scratch_kb(tenant_id, ds, opts) if scratch
                    else self.d.kbs.get(tenant_id, opts.knowledge_base_id))
        try:
            if scratch:
                mapping = await self._index(tenant_id, kb, ds, opts, progress)
                unmapped = 0
            else:
                mapping, unmapped = await self._map_existing(tenant_id, kb, ds)
            results = await self._retrieve(tenant_id, kb, ds, opts, mapping, reranker, progress)
            answers = None
            if model is not None:
                answers = await self._answer(tenant_id, kb, ds, opts, model, results, progress)
        finally:
            if scratch and not opts.keep:
                await self.d.kbs.delete(tenant_id, kb.id)
        rows = list(results.values())
        return EvalReport(
            dataset=ds.name, started_at=started.isoformat(timespec="seconds"),
            seconds=round(time.perf_counter() - t0, 2), options=opts, knowledge_base_id=kb.id,
            knowledge_base_kept=not scratch or opts.keep,
            embedder=_embedder_name(kb, self.d.default_embedder), passages=len(ds.corpus),
            queries=len(ds.queries), unjudged_queries=ds.unjudged, mapped_documents=len(mapping),
            unmapped_documents=unmapped, retrieval=_rounded(metrics.mean([r.retrieval for r in rows])),
            reranked=_rounded(metrics.mean([r.reranked for r in rows if r.reranked is not None]))
            if reranker is not None else None, answers=answers, per_query=rows)

    async def check(self, tenant_id: int, ds: Dataset, opts: EvalOptions
                    ) -> tuple[Reranker | None, ChatModel | None]:
        """The models the run names, resolved now: an unknown one is a ``BadRequest`` before anything is
        ingested (the API calls this before it starts the background task)."""
        reranker = await self._reranker(tenant_id, opts)
        model = await self._chat_model(tenant_id, opts) if opts.answers and ds.answers else None
        if not opts.knowledge_base_id:
            await self._check_embedder(tenant_id, opts)
        return reranker, model

    # --- the knowledge base ---------------------------------------------------------------------------------
    async def _reranker(self, tenant_id: int, opts: EvalOptions) -> Reranker | None:
        if not opts.rerank_model:
            return None
        try:
            reranker = await self.d.rerankers.get(opts.rerank_model, tenant_id=tenant_id)
        except ModelError as exc:
            raise BadRequest(f"rerank model {opts.rerank_model!r}: {exc}") from exc
        if reranker is None:
            raise BadRequest(f"rerank model {opts.rerank_model!r} not found")
        return reranker

    async def _chat_model(self, tenant_id: int, opts: EvalOptions) -> ChatModel:
        try:
            return await self.d.chat_models.get(opts.chat_model or None, tenant_id=tenant_id)
        except ModelError as exc:
            raise BadRequest(f"chat model {opts.chat_model!r}: {exc}") from exc

    async def _check_embedder(self, tenant_id: int, opts: EvalOptions) -> None:
        """An unknown embedder is a bad request before anything is ingested, not a failure midway."""
        try:
            await self.d.search.embedders.get(opts.embedder or None, tenant_id=tenant_id)
        except AppError:
            raise
        except Exception as exc:  # noqa: BLE001 - the registries raise ValueError/KeyError kinds
            raise BadRequest(f"embedder {opts.embedder!r}: {exc}") from exc

    async def _scratch_kb(self, tenant_id: int, ds: Dataset, opts: EvalOptions) -> KnowledgeBase:
        retrieval: dict[str, object] = {"vector_threshold": opts.vector_threshold,
                                        "keyword_threshold": opts.keyword_threshold}
        if opts.fusion:
            retrieval["fusion"] = opts.fusion
        body: dict[str, object] = {
            "name": f"eval-{ds.name}-{uuid.uuid4().hex[:8]}"[:255],
            "description": f"evaluation of {ds.name} (knora eval)", "is_temporary": not opts.keep,
            "embedding_model_id": opts.embedder, "rerank_model_id": opts.rerank_model,
            "summary_model_id": opts.chat_model, "retrieval_config": retrieval}
        if opts.indexing == "chunked" and opts.chunk_size:
            body["chunking_config"] = {"chunk_size": opts.chunk_size}
        return await self.d.kbs.create(tenant_id, body)

    async def _index(self, tenant_id: int, kb: KnowledgeBase, ds: Dataset, opts: EvalOptions,
                     progress: Progress) -> dict[str, str]:
        """Knowledge id → corpus id of the corpus ingested into ``kb``."""
        total = len(ds.corpus)
        progress("indexing", 0, total)
        mapping: dict[str, str] = {}
        if opts.indexing == "passage":
            step = 64
            for start in range(0, total, step):
                part = ds.corpus[start:start + step]
                docs = await self.d.ingest.add_passages(tenant_id, kb.id, [
                    NewPassage(p.title, p.text, {CORPUS_ID: p.id}) for p in part])
                mapping.update({k.id: p.id for k, p in zip(docs, part, strict=True)})
                progress("indexing", min(start + step, total), total)
            return mapping
        for p in ds.corpus:
            k = await self.d.ingest.add_manual(tenant_id, kb.id, p.title or p.id, p.text, channel="api")
            mapping[k.id] = p.id
        await self._wait_ingested(tenant_id, mapping, progress)
        return mapping

    async def _wait_ingested(self, tenant_id: int, mapping: dict[str, str], progress: Progress) -> None:
        pending, total = set(mapping), len(mapping)
        deadline = time.monotonic() + INGEST_TIMEOUT_S
        while pending:
            for kid in list(pending):
                k = await self.d.knowledge.get(tenant_id, kid)
                if k is None or k.parse_status == ParseStatus.FAILED:
                    reason = k.error_message if k is not None else "deleted"
                    raise AppError(f"passage {mapping[kid]!r} was not ingested: {reason}", status=500)
                if k.parse_status == ParseStatus.COMPLETED:
                    pending.discard(kid)
            progress("indexing", total - len(pending), total)
            if pending:
                if time.monotonic() > deadline:
                    raise AppError(f"{len(pending)} passages not ingested within {INGEST_TIMEOUT_S:.0f} s")
                await asyncio.sleep(0.2)

    async def _map_existing(self, tenant_id: int, kb: KnowledgeBase,
                            ds: Dataset) -> tuple[dict[str, str], int]:
        ids = {p.id for p in ds.corpus}
        mapping: dict[str, str] = {}
        unmapped, page = 0, 1
        while True:
            got = await self.d.knowledge.list(tenant_id, kb.id, page=page, page_size=500)
            for k in got.items:
                candidates = (str(k.metadata.get(CORPUS_ID, "")), k.title, PurePosixPath(k.file_name).stem)
                found = next((c for c in candidates if c and c in ids), None)
                if found is None:
                    unmapped += 1
                else:
                    mapping[k.id] = found
            if page * 500 >= got.total or not got.items:
                break
            page += 1
        if not mapping:
            raise BadRequest(f"no document of knowledge base {kb.name!r} maps to a corpus id of {ds.name} "
                             f"(by metadata '{CORPUS_ID}', title or file name)")
        return mapping, unmapped

    # --- retrieval ------------------------------------------------------------------------------------------
    async def _retrieve(self, tenant_id: int, kb: KnowledgeBase, ds: Dataset, opts: EvalOptions,
                        mapping: dict[str, str], reranker: Reranker | None,
                        progress: Progress) -> dict[str, QueryResult]:
        out: dict[str, QueryResult] = {}
        total = len(ds.queries)
        progress("searching", 0, total)
        for i, q in enumerate(ds.queries, 1):
            results = await self.d.search.search(tenant_id, SearchParams(
                knowledge_base_id=kb.id, query_text=q.text, match_count=opts.match_count,
                vector_threshold=opts.vector_threshold, keyword_threshold=opts.keyword_threshold,
                disable_vector_match=opts.mode == "keyword", disable_keywords_match=opts.mode == "vector",
                skip_context_enrichment=True, fusion=opts.fusion))
            gains = ds.qrels[q.id]
            ranked = _ranked(results, mapping)
            row = QueryResult(query_id=q.id, query=q.text, retrieval=metrics.retrieval_metrics(ranked, gains))
            if reranker is not None and results:
                try:
                    scores = await reranker.rerank(q.text, [r.content for r in results])
                except ModelError as exc:
                    raise AppError(f"rerank failed: {exc}", status=502) from exc
                ranked = _ranked([results[s.index] for s in scores], mapping)
                row.reranked = metrics.retrieval_metrics(ranked, gains)
            elif reranker is not None:
                row.reranked = metrics.retrieval_metrics([], gains)
            row.ranked = ranked[:10]
            row.first_relevant_rank = next((n for n, d in enumerate(ranked, 1) if gains.get(d, 0) > 0), None)
            out[q.id] = row
            progress("searching", i, total)
        return out

    # --- answers --------------------------------------------------------------------------------------------
    async def _answer(self, tenant_id: int, kb: KnowledgeBase, ds: Dataset, opts: EvalOptions,
                      model: ChatModel, rows: dict[str, QueryResult], progress: Progress) -> AnswerSummary:
        asked = [q for q in ds.queries if q.id in ds.answers]
        judge: ChatModel | None = model if opts.judge and getattr(model, "generative", True) else None
        agent = AgentConfig(name="evaluation", config={
            "multi_turn_enabled": False, "embedding_top_k": opts.top_k,
            "vector_threshold": opts.vector_threshold, "keyword_threshold": opts.keyword_threshold,
            "rerank_model_id": opts.rerank_model, "model_id": opts.chat_model})
        summary = AnswerSummary(questions=len(asked), answer_model=model.model_id,
                                judge_model=judge.model_id if judge is not None else "")
        gold_hits, f1_sum, judged_sum = 0, 0.0, 0.0
        progress("answering", 0, len(asked))
        for i, q in enumerate(asked, 1):
            row, golds = rows[q.id], ds.answers[q.id]
            registry = ReferenceRegistry(True)
            req = TurnRequest(tenant_id=tenant_id, session_id=str(uuid.uuid4()), request_id=str(uuid.uuid4()),
                              user_message_id=str(uuid.uuid4()), assistant_message_id=str(uuid.uuid4()),
                              query=q.text, knowledge_base_ids=[kb.id], agent=agent)
            try:
                outcome = await self.d.quick_answer.run(req, TurnContext(bus=EventBus(), references=registry))
            except Exception as exc:  # noqa: BLE001 - one failed turn is a recorded miss, not a failed run
                row.error = f"{type(exc).__name__}: {exc}"[:500]
                summary.errors += 1
                progress("answering", i, len(asked))
                continue
            answer = outcome.answer
            row.answer, row.contains_gold = answer, metrics.contains_gold(answer, golds)
            row.token_f1 = metrics.token_f1(answer, golds)
            row.generation = metrics.generation_metrics(answer, golds)
            summary.answered += 1
            gold_hits += row.contains_gold
            f1_sum += row.token_f1
            if judge is not None:
                row.faithfulness = await self._judge(judge, q.text, answer, outcome.references, registry)
                if row.faithfulness is not None:
                    summary.judged += 1
                    judged_sum += row.faithfulness
            progress("answering", i, len(asked))
        n = max(summary.questions, 1)  # failed turns count as misses
        summary.contains_gold, summary.token_f1 = round(gold_hits / n, 4), round(f1_sum / n, 4)
        summary.faithfulness = round(judged_sum / summary.judged, 4) if summary.judged else None
        summary.generation = _rounded(metrics.mean([r.generation for r in rows.values() if r.generation]))
        return summary

    @staticmethod
    async def _judge(model: ChatModel, question: str, answer: str, references: list[SearchResult],
                     registry: ReferenceRegistry) -> float | None:
        """The passages the answer cites (all the turn's references when it cites none)."""
        by_id = {r.id: r.content for r in references}
        cited = []
        for handle in dict.fromkeys(_CITED.findall(answer)):
            target = registry.resolve(handle)
            if target is not None and str(target.get("id")) in by_id:
                cited.append(by_id[str(target["id"])])
        try:
            return await judge_faithfulness(model, question, _CITED.sub("", answer),
                                            cited or list(by_id.values()))
        except ModelError:
            return None


def _ranked(results: list[SearchResult], mapping: dict[str, str]) -> list[str]:
    return metrics.dedupe([mapping.get(r.knowledge_id, f"unmapped:{r.knowledge_id}") for r in results])


def _rounded(values: dict[str, float]) -> dict[str, float]:
    return {k: round(v, 4) for k, v in values.items()}


def _embedder_name(kb: KnowledgeBase, default: Callable[[], str]) -> str:
    """The embedder a report names: the settings' spec for the built-in embedding model, not its id."""
    if kb.embedding_model_id in ("", BUILTIN_EMBEDDING_MODEL_ID):
        return default()
    return kb.embedding_model_id
