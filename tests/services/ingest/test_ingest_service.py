"""Ingestion end to end through the service: jobs, chunk swaps, index writes, failures, restart and
re-parse."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from knora.domain.errors import BadRequest, NotFound, PayloadTooLarge
from knora.domain.knowledge import ChunkType, ParseStatus
from knora.root import build_services
from knora.services.ingest.service import DuplicateKnowledge
from knora.settings import Settings
from tests.conftest import RECORDING, record_retrieval, started, stop_jobs
from tests.fakes.web_site import Page, redirect, serve

pytestmark = pytest.mark.integration

TEXT = "\n\n".join(f"Paragraph {i}. " + ("Knora ingests documents into knowledge bases. " * 6)
                   for i in range(12))


async def _kb(c: Any, **body: Any) -> Any:
    return await c.kb_service.create(c.default_tenant_id, {"name": "docs", **body})


async def _ingest(c: Any, kb: Any, name: str = "guide.md", data: bytes = TEXT.encode()) -> Any:
    k = await c.ingest_service.add_file(c.default_tenant_id, kb.id, name, data)
    await c.jobs.wait_idle(30)
    return await c.repos.knowledge.get(None, k.id)


async def _chunks(c: Any, knowledge_id: str, types: list[str] | None = None) -> list[Any]:
    page = await c.repos.chunks.list(c.default_tenant_id, knowledge_id, page=1, page_size=1000,
                                     chunk_types=types)
    return list(page.items)


class TestIngestFile:
    async def test_document_is_chunked_linked_embedded_and_indexed(self, container: Any) -> None:
        rec = record_retrieval(container)
        kb = await _kb(container, chunking_config={"chunk_size": 200, "chunk_overlap": 40})
        k = await _ingest(container, kb)
        assert k.parse_status == ParseStatus.COMPLETED, k.error_message
        chunks = await _chunks(container, k.id)
        assert len(chunks) > 3
        assert all(len(c.content) <= 200 for c in chunks)
        by_id = {c.id: c for c in chunks}
        assert chunks[0].pre_chunk_id is None
        assert chunks[-1].next_chunk_id is None
        for a, b in itertools.pairwise(chunks):
            assert a.next_chunk_id == b.id
            assert by_id[b.id].pre_chunk_id == a.id
        assert set(rec.rows) == set(by_id)
        row = rec.rows[chunks[0].id]
        assert row.content.startswith(k.title + "\n")
        assert chunks[0].content.strip() in row.content
        assert row.embedding is not None
        assert len(row.embedding) == container.embedders.default.dimension
        assert row.knowledge_base_id == kb.id
        assert row.tenant_id == container.default_tenant_id

    async def test_same_content_twice_is_a_duplicate(self, sqlite_container: Any) -> None:
        c = sqlite_container
        kb = await _kb(c)
        first = await _ingest(c, kb)
        with pytest.raises(DuplicateKnowledge) as err:
            await c.ingest_service.add_file(c.default_tenant_id, kb.id, "copy.md", TEXT.encode())
        assert err.value.existing.id == first.id
        assert err.value.kind == "duplicate_file"

    @pytest.mark.parametrize(("name", "data", "exc"), [
        ("a.exe", b"MZ....", BadRequest), ("empty.txt", b"  \n", BadRequest), ("", b"hello", BadRequest),
    ])
    async def test_bad_uploads_are_refused_before_anything_is_written(self, sqlite_container: Any, name: str,
                                                                      data: bytes,
                                                                      exc: type[Exception]) -> None:
        c = sqlite_container
        kb = await _kb(c)
        with pytest.raises(exc):
            await c.ingest_service.add_file(c.default_tenant_id, kb.id, name, data)
        assert (await c.repos.knowledge.list(c.default_tenant_id, kb.id, page=1, page_size=10)).total == 0
        assert not list((c.settings.data_dir / "blobs").rglob("*.*"))

    @pytest.mark.parametrize(("name", "data"), [
        ("README", b"socat - multipurpose relay.\n\nSocat relays data between two channels."),
        ("zone.dns", b"; the example zone\n$ORIGIN example.org.\nwww IN A 192.0.2.10\n"),
        ("NEWS", "版本 2.0：新增中文界面。".encode("gb18030")),
    ])
    async def test_text_files_without_a_known_extension_are_read_as_text(self, sqlite_container: Any,
                                                                         name: str,
                                                                         data: bytes) -> None:
        c = sqlite_container
        kb = await _kb(c)
        k = await _ingest(c, kb, name, data)
        assert k.parse_status == ParseStatus.COMPLETED, k.error_message
        assert k.file_type == "txt"
        assert k.file_name == name
        first = (await _chunks(c, k.id))[0].content
        assert data.decode("utf-8" if name != "NEWS" else "gb18030")[:10] in first

    async def test_a_folder_of_readmes_is_listed_by_folder_until_a_document_titles_itself(
            self, sqlite_container: Any) -> None:
        c = sqlite_container
        kb = await _kb(c)
        plain = await c.ingest_service.add_file(c.default_tenant_id, kb.id, "doc/socat/README",
                                                b"socat relays data between two channels.")
        assert plain.title == "socat/README"  # while it is processed
        assert plain.file_name == "README"
        titled = await c.ingest_service.add_file(c.default_tenant_id, kb.id, "doc/gzip/README",
                                                 b"gzip for Debian\n---------------\n\nCompression.")
        await c.jobs.wait_idle(30)
        assert (await c.repos.knowledge.get(None, plain.id)).title == "socat/README"  # no title of its own
        assert (await c.repos.knowledge.get(None, titled.id)).title == "gzip for Debian"

    @pytest.mark.parametrize("name", ["blob", "payload.dat", "tool.exe"])
    async def test_binary_files_without_a_known_type_are_refused_naming_it(self, sqlite_container: Any,
                                                                           name: str) -> None:
        c = sqlite_container
        kb = await _kb(c)
        with pytest.raises(BadRequest, match="Unsupported file type"):
            await c.ingest_service.add_file(c.default_tenant_id, kb.id, name,
                                            b"\x00\x01\x02 binary \xff" * 50)

    async def test_upload_over_the_limit_is_refused(self, make_settings: Callable[..., Settings]) -> None:
        async with started(make_settings(max_upload_bytes=100), RECORDING) as c:
            kb = await _kb(c)
            with pytest.raises(PayloadTooLarge):
                await c.ingest_service.add_file(c.default_tenant_id, kb.id, "big.txt", b"x" * 101)

    async def test_path_traversal_in_the_name_stays_inside_the_blob_store(self,
                                                                          sqlite_container: Any) -> None:
        c = sqlite_container
        kb = await _kb(c)
        k = await _ingest(c, kb, "../../../../etc/evil.txt", b"plain text body")
        assert k.file_name == "evil.txt"
        assert ".." not in k.file_path
        assert (c.settings.data_dir / "blobs" / k.file_path).resolve().is_relative_to(
            (c.settings.data_dir / "blobs").resolve())

    async def test_unknown_kb_is_not_found(self, sqlite_container: Any) -> None:
        with pytest.raises(NotFound):
            await sqlite_container.ingest_service.add_file(sqlite_container.default_tenant_id,
                                                           "00000000-0000-0000-0000-000000000000", "a.txt",
                                                           b"x")

    async def test_corrupt_file_fails_with_a_reason_and_indexes_nothing(self, sqlite_container: Any) -> None:
        c = sqlite_container
        rec = record_retrieval(c)
        kb = await _kb(c)
        k = await _ingest(c, kb, "broken.pdf", b"%PDF-1.4 this is not really a pdf")
        assert k.parse_status == ParseStatus.FAILED
        assert k.error_message
        assert await _chunks(c, k.id) == []
        assert rec.rows == {}

    async def test_index_failure_marks_failed_and_leaves_no_chunk_rows(self, sqlite_container: Any) -> None:
        c = sqlite_container
        rec = record_retrieval(c)
        rec.fail_next_index = RuntimeError("index down")
        kb = await _kb(c)
        k = await _ingest(c, kb)
        assert k.parse_status == ParseStatus.FAILED
        assert "index down" in k.error_message
        assert await _chunks(c, k.id) == []

    async def test_parent_child_mode_indexes_children_only(self, sqlite_container: Any) -> None:
        c = sqlite_container
        rec = record_retrieval(c)
        kb = await _kb(c, chunking_config={"enable_parent_child": True, "parent_chunk_size": 600,
                                           "child_chunk_size": 150})
        k = await _ingest(c, kb)
        parents = await _chunks(c, k.id, ["parent_text"])
        children = await _chunks(c, k.id, ["text"])
        assert parents
        assert children
        parent_ids = {p.id for p in parents}
        assert all(ch.parent_chunk_id in parent_ids for ch in children)
        assert all(ch.pre_chunk_id is None and ch.next_chunk_id is None for ch in children)
        assert set(rec.rows) == {ch.id for ch in children}
        assert all(p.chunk_type == ChunkType.PARENT_TEXT for p in parents)

    async def test_manual_text_is_ingested_and_a_draft_is_not(self, sqlite_container: Any) -> None:
        c = sqlite_container
        kb = await _kb(c)
        k = await c.ingest_service.add_manual(c.default_tenant_id, kb.id, "Notes",
                                              "# Notes\n\nKnora is a RAG engine.")
        draft = await c.ingest_service.add_manual(c.default_tenant_id, kb.id, "Later", "not yet",
                                                  status="draft")
        await c.jobs.wait_idle(30)
        got = await c.repos.knowledge.get(None, k.id)
        assert got.parse_status == ParseStatus.COMPLETED
        assert got.title == "Notes"
        assert got.file_type == "md"
        assert (await c.repos.knowledge.get(None, draft.id)).parse_status == ParseStatus.PENDING
        assert await _chunks(c, draft.id) == []


class TestReparseDeleteRestart:
    async def test_reparse_swaps_chunks_in_db_and_index(self, container: Any) -> None:
        c = container
        rec = record_retrieval(c)
        kb = await _kb(c, chunking_config={"chunk_size": 500})
        k = await _ingest(c, kb)
        before = {x.id for x in await _chunks(c, k.id)}
        await c.kb_service.update(c.default_tenant_id, kb.id,
                                  {"config": {"chunking_config": {"chunk_size": 150}}})
        await c.ingest_service.reparse(c.default_tenant_id, k.id)
        await c.jobs.wait_idle(30)
        after = {x.id for x in await _chunks(c, k.id)}
        assert after
        assert not (after & before)
        assert len(after) > len(before)
        assert set(rec.rows) == after
        assert (await c.repos.knowledge.get(None, k.id)).parse_status == ParseStatus.COMPLETED

    async def test_delete_document_and_kb_clear_every_index(self, sqlite_container: Any) -> None:
        c = sqlite_container
        rec = record_retrieval(c)
        kb = await _kb(c)
        k1 = await _ingest(c, kb)
        k2 = await _ingest(c, kb, "other.txt", b"A different document about search engines.")
        await c.ingest_service.delete(c.default_tenant_id, k1.id)
        assert ("delete_knowledge", [k1.id]) in rec.calls
        assert {r.knowledge_id for r in rec.rows.values()} == {k2.id}
        assert not (c.settings.data_dir / "blobs" / k1.file_path).exists()
        await c.kb_service.delete(c.default_tenant_id, kb.id)
        assert ("delete_knowledge_base", kb.id) in rec.calls
        assert rec.rows == {}
        assert await c.repos.knowledge.get(None, k2.id) is None

    async def test_deleted_while_queued_is_skipped(self, sqlite_container: Any) -> None:
        c = sqlite_container
        rec = record_retrieval(c)
        await stop_jobs(c)
        kb = await _kb(c)
        k = await c.ingest_service.add_file(c.default_tenant_id, kb.id, "a.txt", b"some words here")
        await c.ingest_service.delete(c.default_tenant_id, k.id)
        await c.jobs.start()
        await c.jobs.wait_idle(30)
        assert rec.rows == {}

    async def test_pending_job_survives_a_restart(self, make_settings: Callable[..., Settings],
                                                  db_url: str) -> None:
        settings = make_settings(database_url=db_url)
        first = await build_services(settings, RECORDING)
        await stop_jobs(first)  # nothing runs in this process
        kb = await _kb(first)
        k = await first.ingest_service.add_file(first.default_tenant_id, kb.id, "guide.md", TEXT.encode())
        assert (await first.repos.knowledge.get(None, k.id)).parse_status == ParseStatus.PENDING
        await first.aclose()

        async with started(settings, RECORDING) as second:
            await asyncio.sleep(0)
            await second.jobs.wait_idle(30)
            got = await second.repos.knowledge.get(None, k.id)
            assert got.parse_status == ParseStatus.COMPLETED, got.error_message
            assert len(await _chunks(second, k.id)) > 0


@pytest.fixture
def web() -> Iterator[str]:
    pages = {
        "/page": Page(b"<html><head><title>Fetched page</title></head><body><nav>menu</nav>"
                      b"<article><h1>Fetched page</h1><p>Knora can ingest web pages fetched "
                      b"from a URL.</p></article></body></html>", "text/html"),
        "/moved": redirect("/page"),
        "/notes.txt": Page(b"Plain notes served as a file.", "text/plain"),
        "/big": Page(b"y" * 5000, "text/plain"),
    }
    with serve(pages) as base:
        yield base


class TestIngestUrl:
    async def test_private_addresses_are_refused_by_default(self, sqlite_container: Any, web: str) -> None:
        kb = await _kb(sqlite_container)
        with pytest.raises(BadRequest, match="not a public address"):
            await sqlite_container.ingest_service.add_url(sqlite_container.default_tenant_id, kb.id,
                                                          f"{web}/page")

    async def test_page_and_file_urls_with_redirect(self, make_settings: Callable[..., Settings],
                                                    web: str) -> None:
        async with started(make_settings(allow_private_network_fetch=True, max_upload_bytes=1000),
                           RECORDING) as c:
            kb = await _kb(c)
            page = await c.ingest_service.add_url(c.default_tenant_id, kb.id, f"{web}/moved")
            note = await c.ingest_service.add_url(c.default_tenant_id, kb.id, f"{web}/notes.txt")
            big = await c.ingest_service.add_url(c.default_tenant_id, kb.id, f"{web}/big")
            gone = await c.ingest_service.add_url(c.default_tenant_id, kb.id, f"{web}/nothing-here")
            with pytest.raises(DuplicateKnowledge):
                await c.ingest_service.add_url(c.default_tenant_id, kb.id, f"{web}/moved")
            await c.jobs.wait_idle(30)
            p = await c.repos.knowledge.get(None, page.id)
            assert p.parse_status == ParseStatus.COMPLETED, p.error_message
            assert p.file_type == "html"
            assert "Fetched page" in p.title
            assert "web pages" in (await _chunks(c, p.id))[0].content
            n = await c.repos.knowledge.get(None, note.id)
            assert n.parse_status == ParseStatus.COMPLETED
            assert n.file_type == "txt"
            b = await c.repos.knowledge.get(None, big.id)
            assert b.parse_status == ParseStatus.FAILED
            assert "limit" in b.error_message
            g = await c.repos.knowledge.get(None, gone.id)
            assert g.parse_status == ParseStatus.FAILED
            assert "404" in g.error_message


class TestChunkEdit:
    async def test_edit_reindexes_and_disable_propagates(self, sqlite_container: Any) -> None:
        c = sqlite_container
        rec = record_retrieval(c)
        kb = await _kb(c)
        k = await _ingest(c, kb, "t.txt", b"Original chunk text about llamas.")
        chunk = (await _chunks(c, k.id))[0]
        old_vec = rec.rows[chunk.id].embedding
        edited = await c.chunk_service.update(c.default_tenant_id, k.id, chunk.id,
                                              {"content": "Alpacas now."})
        assert edited.content_revision == chunk.content_revision + 1
        assert rec.rows[chunk.id].content.endswith("Alpacas now.")
        assert rec.rows[chunk.id].embedding != old_vec
        await c.chunk_service.update(c.default_tenant_id, k.id, chunk.id, {"is_enabled": False})
        assert rec.rows[chunk.id].is_enabled is False
        with pytest.raises(BadRequest):
            await c.chunk_service.update(c.default_tenant_id, k.id, chunk.id, {"content": "  "})
        await c.chunk_service.delete(c.default_tenant_id, k.id, chunk.id)
        assert chunk.id not in rec.rows
        assert await _chunks(c, k.id) == []


