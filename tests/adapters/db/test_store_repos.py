"""The store-api repositories on SQLite and PostgreSQL (``container`` is parametrised over both)."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from knora.domain.common import utcnow
from knora.domain.knowledge import (
    PROGRESS_KEY,
    Chunk,
    ChunkingConfig,
    IngestProgress,
    Knowledge,
    KnowledgeBase,
    ParseStatus,
    ProgressStage,
    Tag,
)
from knora.domain.models import ModelConfig
from knora.ports.store import KnowledgeFilter

pytestmark = pytest.mark.integration


def _kb(c: Any, name: str = "kb") -> KnowledgeBase:
    return KnowledgeBase(tenant_id=c.default_tenant_id, name=name,
                         chunking_config=ChunkingConfig(chunk_size=300))


def _doc(kb: KnowledgeBase, **kw: Any) -> Knowledge:
    return Knowledge(tenant_id=kb.tenant_id, knowledge_base_id=kb.id, **kw)


def _chunks(k: Knowledge, n: int) -> list[Chunk]:
    return [Chunk(tenant_id=k.tenant_id, knowledge_base_id=k.knowledge_base_id, knowledge_id=k.id,
                  content=f"chunk {i}", chunk_index=i) for i in range(n)]


class TestKnowledgeBaseRepo:
    async def test_round_trip_keeps_nested_config_and_timezones(self, container: Any) -> None:
        repo = container.repos.kbs
        kb = await repo.create(_kb(container))
        got = await repo.get(container.default_tenant_id, kb.id)
        assert got is not None
        assert got.chunking_config.chunk_size == 300
        assert got.created_at.tzinfo is not None
        assert got.name == "kb"

    async def test_other_tenant_sees_nothing(self, container: Any) -> None:
        kb = await container.repos.kbs.create(_kb(container))
        other, _ = await container.tenants.create("other")
        assert await container.repos.kbs.get(other.id, kb.id) is None
        assert await container.repos.kbs.list(other.id) == []
        assert await container.repos.kbs.delete(other.id, kb.id) is False

    async def test_stats_count_documents_chunks_and_busy_ones(self, container: Any) -> None:
        r = container.repos
        kb = await r.kbs.create(_kb(container))
        done = await r.knowledge.create(_doc(kb, title="a", parse_status=ParseStatus.COMPLETED))
        await r.knowledge.create(_doc(kb, title="b"))
        await r.chunks.replace_for_knowledge(done.id, _chunks(done, 3))
        stats = (await r.kbs.stats(kb.tenant_id, [kb.id]))[kb.id]
        assert (stats.knowledge_count, stats.chunk_count, stats.processing_count) == (2, 3, 1)

    async def test_delete_removes_documents_chunks_and_tags(self, container: Any) -> None:
        r = container.repos
        kb = await r.kbs.create(_kb(container))
        k = await r.knowledge.create(_doc(kb))
        await r.chunks.replace_for_knowledge(k.id, _chunks(k, 2))
        await r.tags.create(Tag(tenant_id=kb.tenant_id, knowledge_base_id=kb.id, name="t"))
        assert await r.kbs.delete(kb.tenant_id, kb.id)
        assert await r.knowledge.get(None, k.id) is None
        assert await r.chunks.ids_for_knowledge(k.id) == []
        assert (await r.tags.list(kb.tenant_id, kb.id, page=1, page_size=10)).total == 0


class TestKnowledgeRepo:
    async def test_list_pages_and_filters(self, container: Any) -> None:
        r = container.repos
        kb = await r.kbs.create(_kb(container))
        for i in range(5):
            await r.knowledge.create(_doc(kb, title=f"Doc {i}", file_type="pdf" if i % 2 else "md"))
        page1 = await r.knowledge.list(kb.tenant_id, kb.id, page=1, page_size=2)
        page3 = await r.knowledge.list(kb.tenant_id, kb.id, page=3, page_size=2)
        assert page1.total == 5
        assert len(page1.items) == 2
        assert len(page3.items) == 1
        ids = {k.id for k in page1.items} | {k.id for k in page3.items}
        assert len(ids) == 3
        pdfs = await r.knowledge.list(kb.tenant_id, kb.id, page=1, page_size=10,
                                      filters=KnowledgeFilter(file_type="pdf"))
        assert pdfs.total == 2
        kw = await r.knowledge.list(kb.tenant_id, kb.id, page=1, page_size=10,
                                    filters=KnowledgeFilter(keyword="doc 3"))
        assert [k.title for k in kw.items] == ["Doc 3"]

    async def test_progress_is_kept_only_while_processing_beside_the_rest(self, container: Any) -> None:
        r = container.repos
        kb = await r.kbs.create(_kb(container))
        k = await r.knowledge.create(_doc(kb, metadata={"doc_author": "Ann"}))
        progress = IngestProgress(stage=ProgressStage.EMBEDDING, done=64, total=640, started_at=utcnow(),
                                  eta_seconds=12.5)
        assert not await r.knowledge.set_progress(k.id, progress)  # pending: nothing is running
        await r.knowledge.mark_processing([k.id])
        before = await r.knowledge.get(None, k.id)
        assert await r.knowledge.set_progress(k.id, progress)
        after = await r.knowledge.get(None, k.id)
        assert after.metadata["doc_author"] == "Ann"
        assert IngestProgress.model_validate(after.metadata[PROGRESS_KEY]) == progress
        assert after.updated_at == before.updated_at  # progress is not a change of the document
        assert await r.knowledge.set_progress(k.id, None)
        assert (await r.knowledge.get(None, k.id)).metadata == {"doc_author": "Ann"}
        assert not await r.knowledge.set_progress("no-such-document", progress)

    async def test_storage_used_sums_the_tenants_file_sizes(self, container: Any) -> None:
        r = container.repos
        kb = await r.kbs.create(_kb(container))
        other, _ = await container.tenants.create("other")
        other_kb = await r.kbs.create(KnowledgeBase(tenant_id=other.id, name="theirs"))
        assert await r.knowledge.storage_used(kb.tenant_id) == 0
        await r.knowledge.create(_doc(kb, file_size=3_000_000_000))  # past 32 bits: a BIGINT sum
        await r.knowledge.create(_doc(kb, file_size=25))
        await r.knowledge.create(_doc(kb))  # a URL document not fetched yet: 0
        await r.knowledge.create(_doc(other_kb, file_size=1000))
        assert await r.knowledge.storage_used(kb.tenant_id) == 3_000_000_025
        assert await r.knowledge.storage_used(other.id) == 1000

    async def test_keyword_is_literal_text_not_a_like_pattern(self, container: Any) -> None:
        r = container.repos
        kb = await r.kbs.create(_kb(container))
        for title in ("100% sure", "1000 things", "a_b", "axb", "back\\slash", "backXslash"):
            await r.knowledge.create(_doc(kb, title=title, file_name=f"{len(title)}.md"))

        async def titles(keyword: str) -> list[str]:
            page = await r.knowledge.list(kb.tenant_id, kb.id, page=1, page_size=20,
                                          filters=KnowledgeFilter(keyword=keyword))
            return sorted(k.title for k in page.items)

        assert await titles("%") == ["100% sure"]
        assert await titles("0%") == ["100% sure"]
        assert await titles("_") == ["a_b"]
        assert await titles("a_b") == ["a_b"]
        assert await titles("\\") == ["back\\slash"]
        assert await titles("%%%") == []
        tag = await r.tags.create(Tag(tenant_id=kb.tenant_id, knowledge_base_id=kb.id, name="x_y"))
        await r.tags.create(Tag(tenant_id=kb.tenant_id, knowledge_base_id=kb.id, name="xzy"))
        tags = await r.tags.list(kb.tenant_id, kb.id, page=1, page_size=10, keyword="_")
        assert [t.id for t, _, _ in tags.items] == [tag.id]

    async def test_keyword_matches_across_unicode_forms_and_case(self, container: Any) -> None:
        """Issue 20 item 11: composed vs decomposed, non-ASCII case, and characters outside the BMP."""
        r = container.repos
        kb = await r.kbs.create(_kb(container))
        composed, decomposed = "\u00dcbersicht", "U\u0308bersicht"
        for title, name in ((decomposed, "a.md"), ("Party \U0001F600 notes", "b.md"), ("plain", "c.md")):
            await r.knowledge.create(_doc(kb, title=title, file_name=name))

        async def titles(keyword: str) -> list[str]:
            page = await r.knowledge.list(kb.tenant_id, kb.id, page=1, page_size=20,
                                          filters=KnowledgeFilter(keyword=keyword))
            return sorted(k.title for k in page.items)

        for query in (composed, decomposed, "\u00fcbersicht", "u\u0308BERSICHT", "\u00dc"):
            assert await titles(query) == [decomposed], query
        assert await titles("\U0001F600") == ["Party \U0001F600 notes"]
        for name in ("\u00dc", "U\u0308"):
            await r.tags.create(Tag(tenant_id=kb.tenant_id, knowledge_base_id=kb.id, name=f"{name}ber"))
        for query in ("\u00dc", "U\u0308", "\u00fc"):
            tags = await r.tags.list(kb.tenant_id, kb.id, page=1, page_size=10, keyword=query)
            assert len(tags.items) == 2, query

    async def test_find_duplicate_by_hash_and_url(self, container: Any) -> None:
        r = container.repos
        kb = await r.kbs.create(_kb(container))
        a = await r.knowledge.create(_doc(kb, file_hash="h1"))
        u = await r.knowledge.create(_doc(kb, type="url", source="https://example.org/x"))
        assert (await r.knowledge.find_duplicate(kb.id,
                                                 file_hash="h1")).id == a.id  # type: ignore[union-attr]
        assert (await r.knowledge.find_duplicate(kb.id,
                                                 source="https://example.org/x")).id == u.id  # type: ignore
        assert await r.knowledge.find_duplicate(kb.id, file_hash="h2") is None
        other = await r.kbs.create(_kb(container, "other"))
        assert await r.knowledge.find_duplicate(other.id, file_hash="h1") is None

    async def test_set_status_reports_missing_documents(self, container: Any) -> None:
        r = container.repos
        kb = await r.kbs.create(_kb(container))
        k = await r.knowledge.create(_doc(kb))
        assert await r.knowledge.set_status(k.id, ParseStatus.FAILED, "bad file")
        got = await r.knowledge.get(kb.tenant_id, k.id)
        assert got is not None
        assert got.parse_status == ParseStatus.FAILED
        assert got.error_message == "bad file"
        assert await r.knowledge.set_status("00000000-0000-0000-0000-000000000000",
                                            ParseStatus.FAILED) is False


class TestChunkRepo:
    async def test_replace_swaps_all_chunks_and_completes_in_one_step(self, container: Any) -> None:
        r = container.repos
        kb = await r.kbs.create(_kb(container))
        k = await r.knowledge.create(_doc(kb))
        first = _chunks(k, 3)
        assert await r.chunks.replace_for_knowledge(k.id, first) == []
        second = _chunks(k, 2)
        old = await r.chunks.replace_for_knowledge(k.id, second, complete={"parse_status": "completed",
                                                                           "title": "T"})
        assert sorted(old or []) == sorted(c.id for c in first)
        assert sorted(await r.chunks.ids_for_knowledge(k.id)) == sorted(c.id for c in second)
        got = await r.knowledge.get(None, k.id)
        assert got is not None
        assert got.parse_status == ParseStatus.COMPLETED
        assert got.title == "T"

    async def test_replace_for_a_deleted_document_writes_nothing(self, container: Any) -> None:
        r = container.repos
        kb = await r.kbs.create(_kb(container))
        k = await r.knowledge.create(_doc(kb))
        await r.knowledge.delete(kb.tenant_id, k.id)
        assert await r.chunks.replace_for_knowledge(k.id, _chunks(k, 2)) is None
        assert await r.chunks.ids_for_knowledge(k.id) == []

    async def test_list_orders_by_index_filters_type_and_delete_relinks(self, container: Any) -> None:
        r = container.repos
        kb = await r.kbs.create(_kb(container))
        k = await r.knowledge.create(_doc(kb))
        cs = _chunks(k, 3)
        for a, b in itertools.pairwise(cs):
            a.next_chunk_id, b.pre_chunk_id = b.id, a.id
        cs.append(Chunk(tenant_id=k.tenant_id, knowledge_base_id=kb.id, knowledge_id=k.id, content="p",
                        chunk_type="parent_text", chunk_index=0))
        await r.chunks.replace_for_knowledge(k.id, list(reversed(cs)))
        texts = await r.chunks.list(kb.tenant_id, k.id, page=1, page_size=10, chunk_types=["text"])
        assert [c.chunk_index for c in texts.items] == [0, 1, 2]
        assert texts.total == 3
        assert await r.chunks.delete(kb.tenant_id, cs[1].id)
        first = await r.chunks.get(kb.tenant_id, cs[0].id)
        last = await r.chunks.get(kb.tenant_id, cs[2].id)
        assert first is not None
        assert last is not None
        assert first.next_chunk_id == cs[2].id
        assert last.pre_chunk_id == cs[0].id


class TestTagAndModelRepos:
    async def test_tag_counts_and_delete_untags(self, container: Any) -> None:
        r = container.repos
        kb = await r.kbs.create(_kb(container))
        tag = await r.tags.create(Tag(tenant_id=kb.tenant_id, knowledge_base_id=kb.id, name="red"))
        k = await r.knowledge.create(_doc(kb, tag_id=tag.id))
        chunks = _chunks(k, 2)
        for ch in chunks:
            ch.tag_id = tag.id
        await r.chunks.replace_for_knowledge(k.id, chunks)
        page = await r.tags.list(kb.tenant_id, kb.id, page=1, page_size=10)
        assert [(t.name, kc, cc) for t, kc, cc in page.items] == [("red", 1, 2)]
        assert await r.tags.delete(kb.tenant_id, tag.id)
        got = await r.knowledge.get(None, k.id)
        assert got is not None
        assert got.tag_id is None

    async def test_models_are_per_tenant_and_keep_the_key(self, container: Any) -> None:
        r = container.repos
        m = await r.models.create(ModelConfig(tenant_id=container.default_tenant_id, name="gpt",
                                              type="KnowledgeQA",
                                              api_key="secret", parameters={"base_url": "http://x"}))
        got = await r.models.get(container.default_tenant_id, m.id)
        assert got is not None
        assert got.api_key == "secret"
        assert got.parameters == {"base_url": "http://x"}
        other, _ = await container.tenants.create("other")
        assert await r.models.get(other.id, m.id) is None
        assert [x.id for x in await r.models.list(container.default_tenant_id, type="KnowledgeQA")] == [m.id]
        assert await r.models.list(container.default_tenant_id, type="Embedding") == []
        theirs = await r.models.create(ModelConfig(tenant_id=other.id, name="gpt", type="KnowledgeQA"))
        assert {x.id for x in await r.models.list_every_tenant(type="KnowledgeQA")} == {m.id, theirs.id}
        assert await r.models.list_every_tenant(type="Embedding") == []
