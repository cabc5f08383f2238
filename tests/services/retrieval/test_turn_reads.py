"""TurnReads (one read per row per turn) and the SQL reads it relies on, on a real SQLite store."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from knora.domain.search import SearchParams
from knora.services.citations.registry import _STORED_REF, ReferenceRegistry, _may_hold_stored_ref
from knora.services.retrieval.turn_reads import TurnReads

pytestmark = pytest.mark.integration


def spy(store: Any, monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Counts the calls that reach the real store (each one is a database read)."""
    calls: Counter[str] = Counter()
    for name in ("knowledge_bases", "tenant_retrieval_config", "chunks", "knowledge", "chunks_with_knowledge",
                 "knowledge_bases_with_tenant_config"):
        real: Callable[..., Any] = getattr(store, name)

        def wrapped(*a: Any, _real: Callable[..., Any] = real, _name: str = name, **kw: Any) -> Any:
            calls[_name] += 1
            return _real(*a, **kw)

        monkeypatch.setattr(store, name, wrapped)
    return calls


class TestTurnReads:
    async def test_each_row_is_read_once(self, rc: Any, seed: Any, monkeypatch: pytest.MonkeyPatch) -> None:
        kb = await seed.kb()
        k, chunks = await seed.doc(kb, ["alpha text", "beta text", "gamma text"])
        store = rc.search_service.store
        calls = spy(store, monkeypatch)
        reads = TurnReads(store, tenant_id=kb.tenant_id)
        assert [x.id for x in await reads.knowledge_bases([kb.id, "nope"])] == [kb.id]
        assert [x.id for x in await reads.knowledge_bases(["nope", kb.id, kb.id])] == [kb.id]
        assert await reads.tenant_retrieval_config(kb.tenant_id) == {}
        # KBs and the tenant's config came in one read; the missing id was remembered
        assert calls == Counter(knowledge_bases_with_tenant_config=1)
        got = await reads.chunks([chunks[1].id, chunks[0].id])
        assert [c.id for c in got] == [chunks[1].id, chunks[0].id]
        assert [c.id for c in await reads.chunks([chunks[0].id])] == [chunks[0].id]
        assert [d.id for d in await reads.knowledge([k.id])] == [k.id]
        assert await reads.knowledge([k.id])
        assert calls["chunks"] == 1
        assert calls["knowledge"] == 1

    async def test_hydration_read_brings_documents_and_short_neighbours(
            self, rc: Any, seed: Any, monkeypatch: pytest.MonkeyPatch) -> None:
        kb = await seed.kb()
        k, chunks = await seed.doc(kb, ["one short", "two short", "three short", "x" * 400, "five"])
        store = rc.search_service.store
        calls = spy(store, monkeypatch)
        reads = TurnReads(store, neighbours_below=350)
        found, docs = await reads.chunks_with_knowledge([chunks[1].id, chunks[3].id])
        assert [c.id for c in found] == [chunks[1].id, chunks[3].id]
        assert [d.id for d in docs] == [k.id]
        # chunk 1 is short: its neighbours 0 and 2 came along; chunk 3 is long: 4 did not
        assert {c.id for c in await reads.chunks([chunks[0].id, chunks[2].id])} == {chunks[0].id,
                                                                                    chunks[2].id}
        assert calls == Counter(chunks_with_knowledge=1)
        await reads.chunks([chunks[4].id])
        assert calls["chunks"] == 1

    async def test_joined_read_matches_separate_reads(self, rc: Any, seed: Any) -> None:
        kb = await seed.kb()
        k1, c1 = await seed.doc(kb, ["first doc text", "more"], title="One")
        k2, c2 = await seed.doc(kb, ["second doc text"], title="Two")
        store = rc.search_service.store
        ids = [c1[0].id, c2[0].id, "missing"]
        chunks, docs = await store.chunks_with_knowledge(ids)
        assert sorted(chunks, key=lambda c: c.id) == sorted(await store.chunks(ids), key=lambda c: c.id)
        assert sorted(docs, key=lambda d: d.id) == sorted(await store.knowledge([k1.id, k2.id]),
                                                         key=lambda d: d.id)
        assert all(d.created_at.tzinfo is not None for d in docs)
        assert all(c.created_at.tzinfo is not None for c in chunks)

    async def test_search_through_the_view_reads_scope_once(self, rc: Any, seed: Any,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
        kb = await seed.kb()
        await seed.doc(kb, ["Photosynthesis converts sunlight into chemical energy.", "Qubits superpose."])
        params = SearchParams(knowledge_base_id=kb.id, query_text="sunlight energy",
                              skip_context_enrichment=True)
        plain = await rc.search_service.search(kb.tenant_id, params)
        calls = spy(rc.search_service.store, monkeypatch)
        view = rc.search_service.with_store(TurnReads(rc.search_service.store, tenant_id=kb.tenant_id))
        first = await view.search(kb.tenant_id, params)
        again = await view.search(kb.tenant_id, params)
        assert [r.id for r in first] == [r.id for r in plain] == [r.id for r in again]
        assert [r.content for r in first] == [r.content for r in plain]
        assert calls == Counter(knowledge_bases_with_tenant_config=1, chunks_with_knowledge=1)
        assert rc.search_service.store is not view.store  # the shared service is untouched


@pytest.mark.parametrize("text", [
    "see local://bucket/a.png", "x storage://bk/minio://b/c", "resource://" + "a" * 22, "summary/0000",
    "summary/01234567-89ab-cdef-0123-456789abcdef", "https://example.org and res://0001", "S3://x",
    "plain text without any reference", "cos://b/k and ks3://z", "obs://" * 3,
])
def test_stored_reference_precheck_never_misses_a_match(text: str) -> None:
    if _STORED_REF.search(text):
        assert _may_hold_stored_ref(text)
    else:
        assert ReferenceRegistry(True).encode_text(text) == text


def test_protocol_prompt_skips_the_stored_reference_scan() -> None:
    prompt = ReferenceRegistry(True).protocol_prompt()
    assert "res://" in prompt
    assert not _may_hold_stored_ref(prompt)


class TestHydrationRead:
    async def test_sqlite_join_equals_sqlalchemys_processing(self, rc: Any, seed: Any) -> None:
        """The hydration join reads SQLite's values itself (JSON text, naive UTC timestamps): the models it
        builds must equal the ones SQLAlchemy's own result processing gives, for every column."""
        from sqlalchemy import update

        from knora.adapters.db.repos import search_reads as sr
        from knora.adapters.db.tables import ChunkRow, KnowledgeRow

        kb = await seed.kb()
        k, chunks = await seed.doc(kb, ["first chunk", "second chunk", "third chunk"])
        async with rc.sessions.begin() as s:  # JSON values, a NULL timestamp, unicode in JSON
            await s.execute(update(ChunkRow).where(ChunkRow.id == chunks[0].id).values(
                metadata_={"page": 3, "page_label": "p. 3", "名": ["ä", None]},
                relation_chunks=[chunks[1].id]))
            await s.execute(update(KnowledgeRow).where(KnowledgeRow.id == k.id).values(
                metadata_={"source": "scan"}, processed_at=None))
        other, more = await seed.doc(kb, ["another document's chunk"])
        ids = [c.id for c in chunks] + [more[0].id, "missing"]
        reads = rc.search_service.store
        raw = reads._read_sync(sr._chunks_with_knowledge, ids, 0)

        def via_sqlalchemy(s: Any) -> tuple[list[Any], list[Any]]:
            n = len(sr._CHUNK_COLS)
            out_c, out_k = [], {}
            for r in s.execute(sr._CHUNKS_WITH_KNOWLEDGE, {"ids": ids}):
                c = sr._record(sr.Chunk, ChunkRow, r[:n])
                out_c.append(c)
                if r[n + sr._KNOWLEDGE_ID_AT] is not None:
                    out_k[c.knowledge_id] = sr._record(sr.Knowledge, KnowledgeRow, r[n:])
            return out_c, list(out_k.values())

        ref = reads._read_sync(via_sqlalchemy)
        key = lambda m: m.id  # noqa: E731
        assert sorted(raw[0], key=key) == sorted(ref[0], key=key)
        assert sorted(raw[1], key=key) == sorted(ref[1], key=key)
        first = next(c for c in raw[0] if c.id == chunks[0].id)
        assert first.metadata["名"] == ["ä", None]
        assert first.created_at.tzinfo is not None
        assert len(raw[0]) == 4  # the missing id is simply absent
        assert {d.id for d in raw[1]} == {k.id, other.id}
        assert next(d for d in raw[1] if d.id == k.id).processed_at is None
