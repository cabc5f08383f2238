"""The contract suite, requests: the bodies WeKnora's clients really send are accepted and mean what they mean
to WeKnora's handlers.

Go's ``encoding/json`` writes every field of a request struct: an unset slice, map or pointer as ``null``, an
unset string as ``""``, a number as ``0``, an unset ``time.Time`` as ``"0001-01-01T00:00:00Z"``; and the Go
SDK sends whole response types back (``CreateKnowledgeBase`` posts a ``KnowledgeBase``, ``UpdateKnowledge``
puts a ``Knowledge``), read-only fields included. The web UI adds fields Knora does not know. Form fields and
query parameters are strings (``enable_multimodel=true``, ``page=2``). None of that may be refused, and a zero
that Go sent for "unset" must not be taken as a value (``match_count: 0`` is the default count, not none).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from knora.root import Services
from tests.conftest import client_for

pytestmark = pytest.mark.integration

GO_ZERO_TIME = "0001-01-01T00:00:00Z"
TEXT = "Oolong tea is partially oxidised before it is rolled. Green tea is not oxidised at all."


@pytest.fixture
async def http(sqlite_container: Services) -> AsyncIterator[tuple[Services, httpx.AsyncClient]]:
    await sqlite_container.jobs.start()
    async with client_for(sqlite_container) as h:
        yield sqlite_container, h


def go_knowledge_base(name: str) -> dict[str, Any]:
    """client/knowledgebase.go ``KnowledgeBase`` as ``CreateKnowledgeBase`` marshals it with only the name and
    chunking set."""
    return {"id": "", "name": name, "type": "", "is_temporary": False, "is_pinned": False, "description": "",
            "tenant_id": 0, "chunking_config": {"chunk_size": 400, "chunk_overlap": 40, "separators": None},
            "image_processing_config": {"model_id": ""}, "faq_config": None, "embedding_model_id": "",
            "summary_model_id": "", "vlm_config": {"enabled": False, "model_id": ""},
            "storage_provider_config": None,
            "storage_config": {k: "" for k in ("secret_id", "secret_key", "region", "bucket_name", "app_id",
                                                "path_prefix", "provider")},
            "extract_config": None, "created_at": GO_ZERO_TIME, "updated_at": GO_ZERO_TIME,
            "knowledge_count": 0, "chunk_count": 0, "is_processing": False, "processing_count": 0}


async def _kb_with_text(c: Services, h: httpx.AsyncClient) -> str:
    r = await h.post("/api/v1/knowledge-bases", json=go_knowledge_base("Tea"))
    assert r.status_code == 201, r.text
    kb = r.json()["data"]["id"]
    r = await h.post(f"/api/v1/knowledge-bases/{kb}/knowledge/manual", json={
        "title": "Oxidation", "content": TEXT, "tag_id": "", "channel": ""})
    assert r.status_code == 200, r.text
    await c.jobs.wait_idle(60)
    return str(kb)


async def test_create_knowledge_base_with_the_whole_go_struct(
        http: tuple[Services, httpx.AsyncClient]) -> None:
    _, h = http
    r = await h.post("/api/v1/knowledge-bases", json=go_knowledge_base("From Go"))
    assert r.status_code == 201, r.text
    kb = r.json()["data"]
    assert kb["id"]
    assert kb["name"] == "From Go"
    assert kb["tenant_id"] != 0  # the caller's tenant, never the body's zero
    assert kb["created_at"] != GO_ZERO_TIME
    assert kb["chunking_config"]["chunk_size"] == 400
    assert kb["chunking_config"]["separators"]  # null separators: the default ones, not none


async def test_update_knowledge_base_with_null_config(http: tuple[Services, httpx.AsyncClient]) -> None:
    c, h = http
    kb = await _kb_with_text(c, h)
    r = await h.put(f"/api/v1/knowledge-bases/{kb}", json={"name": "Renamed", "description": "",
                                                            "config": None})
    assert r.status_code == 200, r.text
    assert r.json()["data"]["name"] == "Renamed"
    r = await h.put(f"/api/v1/knowledge-bases/{kb}", json={"name": "Renamed", "description": "d", "config": {
        "chunking_config": {"chunk_size": 300, "chunk_overlap": 30, "separators": None},
        "image_processing_config": {"model_id": ""}, "faq_config": None}})
    assert r.status_code == 200, r.text
    assert r.json()["data"]["chunking_config"]["chunk_size"] == 300


async def test_update_knowledge_with_the_whole_go_struct(http: tuple[Services, httpx.AsyncClient]) -> None:
    c, h = http
    kb = await _kb_with_text(c, h)
    doc = (await h.get(f"/api/v1/knowledge-bases/{kb}/knowledge")).json()["data"][0]
    sent = dict(doc, title="Oxidation levels", metadata=None, processed_at=None, tenant_id=0,
                created_at=GO_ZERO_TIME, unknown_ui_field={"x": 1})
    r = await h.put(f"/api/v1/knowledge/{doc['id']}", json=sent)
    assert r.status_code == 200, r.text
    after = (await h.get(f"/api/v1/knowledge/{doc['id']}")).json()["data"]
    assert after["title"] == "Oxidation levels"
    assert after["tenant_id"] == doc["tenant_id"]
    assert after["created_at"] == doc["created_at"]  # read-only fields are not taken from the body


async def test_hybrid_search_with_go_zero_params(http: tuple[Services, httpx.AsyncClient]) -> None:
    c, h = http
    kb = await _kb_with_text(c, h)
    r = await h.request("GET", f"/api/v1/knowledge-bases/{kb}/hybrid-search", json={
        "query_text": "oolong oxidised", "vector_threshold": 0, "keyword_threshold": 0, "match_count": 0,
        "disable_keywords_match": False, "disable_vector_match": False})
    assert r.status_code == 200, r.text
    assert r.json()["data"], "match_count 0 is Go's unset: the default count, not zero results"


async def test_session_model_and_agent_from_go_zero_structs(http: tuple[Services, httpx.AsyncClient]) -> None:
    _, h = http
    r = await h.post("/api/v1/sessions", json={"title": "", "description": ""})
    assert r.status_code == 201, r.text
    r = await h.post("/api/v1/models", json={
        "name": "bge-reranker", "display_name": "", "type": "Rerank", "source": "remote", "description": "",
        "parameters": {"base_url": "http://127.0.0.1:9/v1", "provider": "jina"}, "is_default": False})
    assert r.status_code == 201, r.text
    model = r.json()["data"]
    r = await h.put(f"/api/v1/models/{model['id']}", json={
        "name": "bge-reranker", "display_name": "BGE", "description": "", "parameters": None,
        "is_default": False})
    assert r.status_code == 200, r.text
    assert r.json()["data"]["display_name"] == "BGE"
    # client/agent_manage.go AgentConfig with nothing set: every number 0, every slice and pointer null.
    zero_config: dict[str, Any] = {
        "agent_mode": "", "prompt_protocol_version": 0, "model_id": "", "rerank_model_id": "",
        "temperature": 0, "max_completion_tokens": 0, "thinking": None, "citation_enabled": None,
        "max_iterations": 0, "allowed_tools": None, "mcp_selection_mode": "", "mcp_services": None,
        "skills_selection_mode": "", "selected_skills": None, "kb_selection_mode": "",
        "knowledge_bases": None,
        "retrieve_kb_only_when_mentioned": False, "retain_retrieval_history": False,
        "image_upload_enabled": False, "vlm_model_id": "", "audio_upload_enabled": False, "asr_model_id": "",
        "image_storage_provider": "", "supported_file_types": None, "data_analysis_enabled": False,
        "faq_priority_enabled": False, "faq_direct_answer_threshold": 0, "faq_score_boost": 0,
        "web_search_enabled": False, "web_search_max_results": 0, "web_fetch_enabled": False,
        "multi_turn_enabled": False, "history_turns": 0, "embedding_top_k": 0, "keyword_threshold": 0,
        "vector_threshold": 0, "rerank_top_k": 0, "rerank_threshold": 0, "enable_query_expansion": False,
        "enable_rewrite": False, "fallback_strategy": "", "fallback_response": ""}
    r = await h.post("/api/v1/agents", json={"name": "Go agent", "description": "", "avatar": "",
                                             "config": zero_config})
    assert r.status_code == 201, r.text
    cfg = r.json()["data"]["config"]
    assert cfg["agent_mode"] == "quick-answer"
    assert cfg["max_iterations"] > 0  # zeros are Go's "unset": the defaults
    assert cfg["embedding_top_k"] > 0


async def test_form_fields_and_query_parameters_are_strings(http: tuple[Services, httpx.AsyncClient]) -> None:
    c, h = http
    kb = await _kb_with_text(c, h)
    r = await h.post(f"/api/v1/knowledge-bases/{kb}/knowledge/file",
                     files={"file": ("notes.txt", b"Black tea is fully oxidised.", "text/plain")},
                     data={"enable_multimodel": "true", "metadata": json.dumps({"team": "tea"}),
                           "fileName": "notes.txt", "channel": "api"})
    assert r.status_code == 200, r.text
    await c.jobs.wait_idle(60)
    r = await h.get(f"/api/v1/knowledge-bases/{kb}/knowledge", params={"page": "1", "page_size": "1"})
    assert r.status_code == 200, r.text
    body = r.json()
    assert (body["page"], body["page_size"], body["total"], len(body["data"])) == (1, 1, 2, 1)
    r = await h.get("/api/v1/sessions", params={"page": "1", "page_size": "10"})
    assert r.status_code == 200, r.text


async def test_unknown_fields_are_ignored_everywhere_a_client_writes(
        http: tuple[Services, httpx.AsyncClient]) -> None:
    c, h = http
    kb = await _kb_with_text(c, h)
    extra = {"frontend_only": True, "x_trace": {"a": [1, 2]}}
    r = await h.post("/api/v1/sessions", json={"title": "t", **extra})
    assert r.status_code == 201, r.text
    sid = r.json()["data"]["id"]
    r = await h.put(f"/api/v1/sessions/{sid}", json={"title": "t2", **extra})
    assert r.status_code == 200, r.text
    r = await h.post(f"/api/v1/knowledge-bases/{kb}/tags", json={"name": "green", "color": "", **extra})
    assert r.status_code in (200, 201), r.text
    r = await h.post("/api/v1/knowledge-search", json={"query": "oolong", "knowledge_base_ids": [kb],
                                                        **extra})
    assert r.status_code == 200, r.text
    assert r.json()["data"]
