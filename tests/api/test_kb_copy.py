"""Copying a knowledge base through the real app (knora.api.routes.kb_copy over knora.services.kb.copy), on
SQLite and PostgreSQL: the copy runs as a job, its progress is WeKnora's ``KBCloneProgress``, the target's
searches find the copied text through the real search route, and stored vectors are re-used."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from knora.domain.knowledge import Knowledge, ParseStatus
from knora.ports.retrieval import StoredRows
from knora.root import Services
from knora.services.kb.tasks import KBTaskProgress
from tests.api.envelope import envelope_error as _err
from tests.conftest import client_for, started

pytestmark = pytest.mark.integration

MISSING = "00000000-0000-4000-8000-000000000000"
TEXT = "The quokka is a small marsupial that lives on Rottnest Island near Perth."


async def _kb(http: httpx.AsyncClient, name: str) -> str:
    r = await http.post("/api/v1/knowledge-bases", json={"name": name})
    assert r.status_code in (200, 201), r.text
    return str(r.json()["data"]["id"])


async def _manual(http: httpx.AsyncClient, kb: str, title: str, content: str) -> dict[str, Any]:
    r = await http.post(f"/api/v1/knowledge-bases/{kb}/knowledge/manual",
                        json={"title": title, "content": content, "status": "publish"})
    assert r.status_code == 200, r.text
    return r.json()["data"]  # type: ignore[no-any-return]


async def _hits(http: httpx.AsyncClient, kb: str, query: str) -> list[dict[str, Any]]:
    r = await http.post(f"/api/v1/knowledge-bases/{kb}/hybrid-search", json={"query_text": query,
                                                                            "match_count": 5})
    assert r.status_code == 200, r.text
    return r.json()["data"]  # type: ignore[no-any-return]


async def _documents(http: httpx.AsyncClient, kb: str) -> list[dict[str, Any]]:
    r = await http.get(f"/api/v1/knowledge-bases/{kb}/knowledge", params={"page": 1, "page_size": 50})
    assert r.status_code == 200, r.text
    return r.json()["data"]  # type: ignore[no-any-return]


class TestCopy:
    async def test_copy_into_a_new_knowledge_base(self, search_container: Services) -> None:
        async with client_for(search_container) as http:
            src = await _kb(http, "Fauna")
            await _manual(http, src, "Quokka", TEXT)
            await _manual(http, src, "Wombat", "Wombats dig burrows and leave cube-shaped droppings.")
            await search_container.jobs.wait_idle(30)
            r = await http.post("/api/v1/knowledge-bases/copy", json={"source_id": src, "target_id": None})
            assert r.status_code == 200, r.text
            started = r.json()["data"]
            assert set(started) == {"task_id", "source_id", "target_id", "message"}
            assert started["source_id"] == src
            assert started["target_id"] not in ("", src)
            dst = started["target_id"]
            await search_container.jobs.wait_idle(30)
            p = await http.get(f"/api/v1/knowledge-bases/copy/progress/{started['task_id']}")
            assert p.status_code == 200, p.text
            prog = p.json()["data"]
            assert prog["status"] == "completed", prog
            assert (prog["progress"], prog["total"], prog["processed"]) == (100, 2, 2)
            assert isinstance(prog["created_at"], int)
            assert isinstance(prog["updated_at"], int)
            assert "copied" not in prog
            assert "error" not in prog

            target = (await http.get(f"/api/v1/knowledge-bases/{dst}")).json()["data"]
            assert target["name"] == "Fauna (copy)"
            assert target["knowledge_count"] == 2
            copies = await _documents(http, dst)
            assert sorted(d["title"] for d in copies) == ["Quokka", "Wombat"]
            assert all(d["parse_status"] == "completed" for d in copies)
            hits = await _hits(http, dst, "quokka Rottnest Island")
            assert hits
            assert "quokka" in hits[0]["content"].lower()
            assert {h["knowledge_id"] for h in hits} <= {d["id"] for d in copies}
            assert await _hits(http, src, "quokka Rottnest Island")  # the source keeps its text

            # chunks are new records of the copy, with the same text
            quokka = next(d for d in copies if d["title"] == "Quokka")
            chunks = (await http.get(f"/api/v1/chunks/{quokka['id']}")).json()["data"]
            assert chunks
            assert all(c["knowledge_id"] == quokka["id"] for c in chunks)
            assert "Rottnest" in " ".join(c["content"] for c in chunks)

    async def test_same_embedder_reuses_stored_vectors(self, search_container: Services) -> None:
        engine = search_container.retrieval
        assert isinstance(engine, StoredRows)
        async with client_for(search_container) as http:
            src, dst = await _kb(http, "A"), await _kb(http, "B")
            k = await _manual(http, src, "Quokka", TEXT)
            await search_container.jobs.wait_idle(30)
            r = await http.post("/api/v1/knowledge-bases/copy", json={"source_id": src, "target_id": dst})
            assert r.status_code == 200, r.text
            assert r.json()["data"]["target_id"] == dst
            await search_container.jobs.wait_idle(30)
            copy = (await _documents(http, dst))[0]
        before = await engine.rows_for_knowledge([k["id"]])
        after = await engine.rows_for_knowledge([copy["id"]])
        assert len(after) == len(before) > 0
        assert {r.knowledge_base_id for r in after} == {dst}
        assert {r.chunk_id for r in after}.isdisjoint({r.chunk_id for r in before})
        by_text = {r.content: r.embedding for r in before}
        for row in after:
            assert row.embedding is not None
            assert row.embedding == pytest.approx(by_text[row.content], abs=1e-6)

    async def test_duplicate(self, sqlite_container: Services) -> None:
        async with client_for(sqlite_container) as http:
            src = await _kb(http, "Notes")
            await _manual(http, src, "Quokka", TEXT)
            await sqlite_container.jobs.wait_idle(30)
            r = await http.post(f"/api/v1/knowledge-bases/{src}/duplicate")
            assert r.status_code == 200, r.text
            data = r.json()["data"]
            assert data["source_id"] == src
            assert data["knowledge_base"]["id"] == data["target_id"]
            assert data["knowledge_base"]["name"] == "Notes (copy)"
            await sqlite_container.jobs.wait_idle(30)
            assert await _hits(http, data["target_id"], "quokka marsupial")
            again = (await http.post(f"/api/v1/knowledge-bases/{src}/duplicate")).json()["data"]
            assert again["knowledge_base"]["name"] == "Notes (copy 2)"

    async def test_bad_input_and_other_tenants(self, sqlite_container: Services) -> None:
        async with client_for(sqlite_container) as http:
            src, dst = await _kb(http, "Mine"), await _kb(http, "Also mine")
            _err(await http.post("/api/v1/knowledge-bases/copy", json={}), 400)
            _err(await http.post("/api/v1/knowledge-bases/copy", json={"source_id": 5}), 400)
            _err(await http.post("/api/v1/knowledge-bases/copy", content=b"{nope"), 400)
            _err(await http.post("/api/v1/knowledge-bases/copy", json={"source_id": "nope"}), 404)
            _err(await http.post("/api/v1/knowledge-bases/copy", json={"source_id": MISSING}), 404)
            _err(await http.post("/api/v1/knowledge-bases/copy",
                                 json={"source_id": src, "target_id": src}), 400)
            _err(await http.post("/api/v1/knowledge-bases/copy",
                                 json={"source_id": src, "task_id": "../x"}), 400)
            _err(await http.get("/api/v1/knowledge-bases/copy/progress/unknown"), 404)
            _err(await http.post(f"/api/v1/knowledge-bases/{MISSING}/duplicate"), 404)
            mine = (await http.post("/api/v1/knowledge-bases/copy",
                                    json={"source_id": src, "target_id": dst, "task_id": "t-1"})).json()
            assert mine["data"]["task_id"] == "t-1"
            _err(await http.post("/api/v1/knowledge-bases/copy",
                                 json={"source_id": src, "target_id": dst, "task_id": "t-1"}), 400)
        _, key = await sqlite_container.tenants.create("other")
        async with client_for(sqlite_container, **{"X-API-Key": key}) as other:
            theirs = await _kb(other, "Theirs")
            _err(await other.post("/api/v1/knowledge-bases/copy", json={"source_id": src}), 404)
            _err(await other.post("/api/v1/knowledge-bases/copy",
                                  json={"source_id": theirs, "target_id": dst}), 404)
            _err(await other.post(f"/api/v1/knowledge-bases/{src}/duplicate"), 404)
            _err(await other.get("/api/v1/knowledge-bases/copy/progress/t-1"), 404)


class TestVectors:
    """Which vectors a copy writes: the source's stored ones when both knowledge bases embed with the same
    model, else the target's model's. The source's stored vectors are replaced by a marker first, so the
    two cannot be confused."""

    async def test_stored_vectors_or_the_targets_model(self, sqlite_container: Services) -> None:
        engine = sqlite_container.retrieval
        assert isinstance(engine, StoredRows)
        repos = sqlite_container.repos
        async with client_for(sqlite_container) as http:
            src = await _kb(http, "Source")
            same, other = await _kb(http, "Same model"), await _kb(http, "Other model")
            kb = await repos.kbs.get(sqlite_container.default_tenant_id, other)
            assert kb is not None
            await repos.kbs.update(kb.model_copy(update={"embedding_model_id": "local:hash"}))
            k = await _manual(http, src, "Quokka", TEXT)
            await sqlite_container.jobs.wait_idle(30)
            stored = await engine.rows_for_knowledge([k["id"]])
            dim = len(stored[0].embedding or [])
            marker = [1.0] + [0.0] * (dim - 1)
            await engine.index([r.model_copy(update={"embedding": marker}) for r in stored])
            for target in (same, other):
                r = await http.post("/api/v1/knowledge-bases/copy",
                                    json={"source_id": src, "target_id": target})
                assert r.status_code == 200, r.text
            await sqlite_container.jobs.wait_idle(30)
            reused = await engine.rows_for_knowledge([(await _documents(http, same))[0]["id"]])
            fresh = await engine.rows_for_knowledge([(await _documents(http, other))[0]["id"]])
        assert [r.embedding for r in reused] == [pytest.approx(marker)] * len(stored)
        expected = await (await sqlite_container.embedders.batcher("local:hash", tenant_id=None)).embed(
            [r.content for r in fresh])
        for row, vec in zip(fresh, expected, strict=True):
            assert row.embedding != pytest.approx(marker)
            assert row.embedding == pytest.approx(vec.tolist(), abs=1e-5)


class TestResume:
    async def test_a_run_cut_short_goes_on_where_it_stopped(self, sqlite_container: Services) -> None:
        """A copy job that ran again after a restart (the queue runs an unfinished job again): documents
        recorded as copied are left alone, a copy left half-written is replaced, the rest are copied."""
        copies = sqlite_container.kb_copy
        tenant = sqlite_container.default_tenant_id
        async with client_for(sqlite_container) as http:
            src, dst = await _kb(http, "Source"), await _kb(http, "Target")
            done = await _manual(http, src, "Quokka", TEXT)
            cut = await _manual(http, src, "Wombat", "Wombats dig burrows and leave cube-shaped droppings.")
            rest = await _manual(http, src, "Numbat", "The numbat eats termites in Western Australia.")
            await sqlite_container.jobs.wait_idle(30)
            src_kb = await copies.knowledge_base(tenant, src, "Source")
            dst_kb = await copies.knowledge_base(tenant, dst, "Target")
            k_done = await sqlite_container.repos.knowledge.get(tenant, done["id"])
            assert k_done is not None
            await copies.copy_document(k_done, src_kb, dst_kb, "11111111-1111-4111-8111-111111111111")
            half = Knowledge(id="22222222-2222-4222-8222-222222222222", tenant_id=tenant,
                             knowledge_base_id=dst, title="Wombat", type="manual",
                             parse_status=ParseStatus.PROCESSING)
            await sqlite_container.repos.knowledge.create(half)
            p = KBTaskProgress(task_id="resume-1", source_id=src, target_id=dst, status="processing",
                               copied={done["id"]: "11111111-1111-4111-8111-111111111111"},
                               started={cut["id"]: half.id})
            await copies.progress.save(tenant, p)
            await copies.run({"tenant_id": tenant, "task_id": "resume-1"})

            prog = (await http.get("/api/v1/knowledge-bases/copy/progress/resume-1")).json()["data"]
            assert prog["status"] == "completed", prog
            assert (prog["total"], prog["processed"]) == (3, 3)
            docs = await _documents(http, dst)
            assert sorted(d["title"] for d in docs) == ["Numbat", "Quokka", "Wombat"]
            ids = {d["title"]: d["id"] for d in docs}
            assert ids["Quokka"] == "11111111-1111-4111-8111-111111111111"
            assert ids["Wombat"] != half.id
            assert await sqlite_container.repos.knowledge.get(tenant, half.id) is None
            assert all(d["parse_status"] == "completed" for d in docs)
            assert {h["knowledge_id"] for h in await _hits(http, dst, "numbat termites")} == {ids["Numbat"]}
            assert rest["id"] not in ids.values()


class TestQuota:
    async def test_a_copy_counts_against_the_storage_quota(self, make_settings: Any) -> None:
        async with started(make_settings(tenant_storage_quota_bytes=len(TEXT.encode()) * 3 // 2)) as c, \
                client_for(c) as http:
            src = await _kb(http, "Source")
            k = await _manual(http, src, "Quokka", TEXT)
            await c.jobs.wait_idle(30)
            assert k["file_size"] > 0
            r = await http.post("/api/v1/knowledge-bases/copy", json={"source_id": src})
            _err(r, 403)
            assert "quota" in r.json()["error"]["message"].lower()
            assert [kb["name"] for kb in (await http.get("/api/v1/knowledge-bases")).json()["data"]] == [
                "Source"]


class TestRestart:
    async def test_a_queued_copy_runs_after_a_restart(self, make_settings: Any) -> None:
        """The copy is a job of the durable queue: queued by one process that stops before running it, it
        is run by the next process on the same data, and its progress is read there."""
        settings = make_settings()
        async with started(settings) as first, client_for(first) as http:
            src = await _kb(http, "Source")
            await _manual(http, src, "Quokka", TEXT)
            await first.jobs.wait_idle(30)
            await first.jobs.stop()  # the workers are gone: the copy stays queued
            r = await http.post("/api/v1/knowledge-bases/copy", json={"source_id": src})
            assert r.status_code == 200, r.text
            task, dst = r.json()["data"]["task_id"], r.json()["data"]["target_id"]
            p = (await http.get(f"/api/v1/knowledge-bases/copy/progress/{task}")).json()["data"]
            assert p["status"] == "pending"
        async with started(settings) as second, client_for(second) as http:
            await second.jobs.wait_idle(30)
            p = (await http.get(f"/api/v1/knowledge-bases/copy/progress/{task}")).json()["data"]
            assert p["status"] == "completed", p
            assert await _hits(http, dst, "quokka Rottnest Island")
