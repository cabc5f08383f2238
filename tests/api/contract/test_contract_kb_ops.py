"""The contract suite for the knowledge-base operations (copy, duplicate, move, rebuild-index, chunk
revisions): each answer has the field names and JSON types WeKnora's Go types give it — the SDK's
``CopyKnowledgeBaseResponse``, ``KBCloneProgress``, ``MoveKnowledgeResponse``; the server's
``DuplicateKnowledgeBaseResponse``, ``KnowledgeMoveProgress``, ``ChunkRevision`` (``internal/types``)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from knora.root import Services
from tests.api.contract import weknora_types as T
from tests.api.contract.go import BOOL, INT, STR, TIME, UINT, F, Kind, Ptr, Slice, Struct, problems
from tests.api.test_kb_copy import TEXT, _kb, _manual
from tests.conftest import client_for

pytestmark = pytest.mark.integration

NOT_SERVED = frozenset({"Chunk.seq_id"})  # as in test_contract_responses.py

COPY_RESPONSE = Struct("CopyKnowledgeBaseResponse", {
    "task_id": F(STR), "source_id": F(STR), "target_id": F(STR), "message": F(STR)})
DUPLICATE_RESPONSE = Struct("DuplicateKnowledgeBaseResponse", {
    "source_id": F(STR), "target_id": F(STR), "message": F(STR), "knowledge_base": F(T.KNOWLEDGE_BASE)})
CLONE_PROGRESS = Struct("KBCloneProgress", {
    "task_id": F(STR), "source_id": F(STR), "target_id": F(STR), "status": F(STR), "progress": F(INT),
    "total": F(INT), "processed": F(INT), "message": F(STR), "error": F(STR, True), "created_at": F(INT),
    "updated_at": F(INT)})
MOVE_RESPONSE = Struct("MoveKnowledgeResponse", {
    "task_id": F(STR), "source_kb_id": F(STR), "target_kb_id": F(STR), "knowledge_count": F(INT),
    "message": F(STR)})
MOVE_PROGRESS = Struct("KnowledgeMoveProgress", {
    "task_id": F(STR), "source_kb_id": F(STR), "target_kb_id": F(STR), "status": F(STR),
    "progress": F(INT), "total": F(INT), "processed": F(INT), "failed": F(INT), "message": F(STR),
    "error": F(STR), "created_at": F(INT), "updated_at": F(INT)})
CHUNK_REVISION = Struct("ChunkRevision", {
    "id": F(STR), "tenant_id": F(UINT), "knowledge_base_id": F(STR), "knowledge_id": F(STR),
    "chunk_id": F(STR), "revision": F(INT), "content": F(STR), "is_enabled": F(BOOL), "editor_id": F(STR),
    "edit_source": F(STR), "edited_at": F(TIME), "created_at": F(TIME)})


def _envelope(r: httpx.Response, kind: Kind, where: str) -> list[str]:
    if r.status_code != 200:
        return [f"{where}: HTTP {r.status_code} {r.text[:200]}"]
    body: Any = r.json()
    envelope = Struct("Envelope", {"success": F(BOOL), "data": F(kind)})
    return [f"{where} {p}" for p in problems(body, envelope, "$", NOT_SERVED)]


async def test_kb_operations(sqlite_container: Services) -> None:
    async with client_for(sqlite_container) as h:
        src, dst = await _kb(h, "Source"), await _kb(h, "Target")
        k = await _manual(h, src, "Quokka", TEXT)
        await sqlite_container.jobs.wait_idle(30)
        found: list[str] = []
        r = await h.post("/api/v1/knowledge-bases/copy", json={"source_id": src, "target_id": dst})
        found += _envelope(r, COPY_RESPONSE, "POST /knowledge-bases/copy")
        await sqlite_container.jobs.wait_idle(30)
        task = r.json()["data"]["task_id"]
        found += _envelope(await h.get(f"/api/v1/knowledge-bases/copy/progress/{task}"), CLONE_PROGRESS,
                           "GET /knowledge-bases/copy/progress/:id")
        found += _envelope(await h.post(f"/api/v1/knowledge-bases/{src}/duplicate"), DUPLICATE_RESPONSE,
                           "POST /knowledge-bases/:id/duplicate")
        found += _envelope(await h.get(f"/api/v1/knowledge-bases/{src}/move-targets"),
                           Slice(T.KNOWLEDGE_BASE), "GET /knowledge-bases/:id/move-targets")
        found += _envelope(await h.post(f"/api/v1/knowledge-bases/{src}/rebuild-index"),
                           Struct("RebuildIndex", {"task_id": F(STR)}),
                           "POST /knowledge-bases/:id/rebuild-index")
        await sqlite_container.jobs.wait_idle(30)

        chunk = (await h.get(f"/api/v1/chunks/{k['id']}")).json()["data"][0]
        url = f"/api/v1/chunks/{k['id']}/{chunk['id']}"
        assert (await h.put(url, json={"content": "Quokkas smile."})).status_code == 200
        found += _envelope(await h.get(f"{url}/revisions"), Slice(Ptr(CHUNK_REVISION)),
                           "GET /chunks/:kid/:id/revisions")
        found += _envelope(await h.post(f"{url}/revert", json={"revision": chunk["content_revision"]}),
                           T.CHUNK, "POST /chunks/:kid/:id/revert")

        r = await h.post("/api/v1/knowledge/move", json={"knowledge_ids": [k["id"]], "source_kb_id": src,
                                                         "target_kb_id": dst, "mode": "reuse_vectors"})
        found += _envelope(r, MOVE_RESPONSE, "POST /knowledge/move")
        await sqlite_container.jobs.wait_idle(30)
        found += _envelope(await h.get(f"/api/v1/knowledge/move/progress/{r.json()['data']['task_id']}"),
                           MOVE_PROGRESS, "GET /knowledge/move/progress/:id")
    assert not found, "\n".join(found)
