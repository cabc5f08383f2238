"""Passages indexed as given: one document and ONE chunk per passage, no parser and no chunker.

For evaluation sets whose relevance judgements are per passage (BEIR): splitting a judged passage into several
chunks would change what is measured. The chunk goes through the same embedder batcher and the same group
commit (index first, then the rows and the ``completed`` status in one transaction) as a parsed document, so
search sees these passages exactly as it sees any other chunk; ``benchmarks/retrieval.py`` indexes the same
way.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field

from knora.domain.common import safe_name, utcnow
from knora.domain.knowledge import Chunk, Knowledge, KnowledgeBase, ParseStatus
from knora.domain.search import IndexRow
from knora.ports.store import Repositories
from knora.services.ingest.committer import GroupCommitter
from knora.services.ingest.embedders import EmbedderRegistry
from knora.services.ingest.quota import StorageQuota

BATCH = 64


@dataclass(frozen=True)
class NewPassage:
    title: str
    text: str
    metadata: dict[str, str] = field(default_factory=dict)


async def add_passages(repos: Repositories, embedders: EmbedderRegistry, committer: GroupCommitter,
                       quota: StorageQuota, kb: KnowledgeBase, passages: Sequence[NewPassage], *,
                       channel: str = "api") -> list[Knowledge]:
    """Indexes ``passages`` into ``kb`` in batches; returns their documents in input order (completed)."""
    await quota.check(kb.tenant_id, sum(len(p.text.encode()) for p in passages),
                      what=f"{len(passages)} passages")
    out: list[Knowledge] = []
    for start in range(0, len(passages), BATCH):
        out += await _batch(repos, embedders, committer, kb, passages[start:start + BATCH], channel)
    return out


async def _batch(repos: Repositories, embedders: EmbedderRegistry, committer: GroupCommitter,
                 kb: KnowledgeBase, batch: Sequence[NewPassage], channel: str) -> list[Knowledge]:
    docs: list[Knowledge] = []
    chunks: list[Chunk] = []
    for p in batch:
        data = p.text.encode()
        k = Knowledge(tenant_id=kb.tenant_id, knowledge_base_id=kb.id, type="manual", title=p.title.strip(),
                      source="passage", file_name=(safe_name(p.title) or "passage")[:120] + ".txt",
                      file_type="txt", file_size=len(data), file_hash=hashlib.sha256(data).hexdigest(),
                      metadata=dict(p.metadata), parse_status=ParseStatus.PROCESSING,
                      embedding_model_id=kb.embedding_model_id, channel=channel)
        await repos.knowledge.create(k)
        docs.append(k)
        chunks.append(Chunk(tenant_id=kb.tenant_id, knowledge_base_id=kb.id, knowledge_id=k.id,
                            content=p.text, end_at=len(p.text), content_hash=k.file_hash))
    contents = [c.index_content(k.title) for c, k in zip(chunks, docs, strict=True)]
    vectors = None
    if kb.indexing_strategy.vector_enabled:
        batcher = await embedders.batcher(kb.embedding_model_id, tenant_id=kb.tenant_id)
        vectors = await batcher.embed(contents)
    now = utcnow()
    commits = []
    for i, (k, c) in enumerate(zip(docs, chunks, strict=True)):
        row = IndexRow(source_id=c.id, chunk_id=c.id, knowledge_id=k.id, knowledge_base_id=kb.id,
                       tenant_id=kb.tenant_id, content=contents[i],
                       embedding=vectors[i].tolist() if vectors is not None else None)
        complete = {"parse_status": str(ParseStatus.COMPLETED), "error_message": "", "processed_at": now,
                    "embedding_model_id": kb.embedding_model_id}
        commits.append(committer.commit(k.id, [c], [row], complete))
    await asyncio.gather(*commits)
    for k in docs:
        k.parse_status = ParseStatus.COMPLETED
    return docs
