"""``/openapi.json`` names the request and response models of the API, so its documentation cannot silently
regress to ``body: Any`` and untyped answers. The wire format itself is checked by the other API tests."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from knora.api.app import create_app
from knora.settings import Settings

API = "/api/v1"

# (method, path) → the request model read with read_body
REQUEST_MODELS = {
    ("post", "/knowledge-bases"): "CreateKnowledgeBaseRequest",
    ("put", "/knowledge-bases/{kb_id}"): "UpdateKnowledgeBaseRequest",
    ("post", "/knowledge-bases/{kb_id}/tags"): "TagRequest",
    ("put", "/knowledge-bases/{kb_id}/tags/{tag_id}"): "TagRequest",
    ("post", "/knowledge-bases/{kb_id}/knowledge/url"): "CreateFromURLRequest",
    ("post", "/knowledge-bases/{kb_id}/knowledge/manual"): "CreateManualRequest",
    ("put", "/knowledge/{knowledge_id}"): "UpdateKnowledgeRequest",
    ("put", "/chunks/{knowledge_id}/{chunk_id}"): "UpdateChunkRequest",
    ("post", "/models"): "ModelRequest",
    ("put", "/models/{model_id}"): "ModelRequest",
    ("post", "/agents"): "AgentRequest",
    ("put", "/agents/{agent_id}"): "AgentRequest",
    ("post", "/agent/tool-approvals/{pending_id}"): "ToolApprovalDecisionRequest",
    ("post", "/mcp-services"): "MCPServiceRequest",
    ("put", "/mcp-services/{service_id}"): "MCPServiceRequest",
    ("put", "/mcp-services/{service_id}/tool-approvals/{tool}"): "ToolApprovalRequest",
    ("post", "/sessions"): "CreateSessionRequest",
    ("put", "/sessions/{session_id}"): "UpdateSessionRequest",
    ("delete", "/sessions/batch"): "BatchDeleteSessionsRequest",
    ("post", "/sessions/{session_id}/generate_title"): "GenerateTitleRequest",
    ("post", "/knowledge-search"): "KnowledgeSearchBody",
    ("post", "/knowledge-bases/{kb_id}/hybrid-search"): "HybridSearchBody",
    ("post", "/knowledge-bases/{kb_id}/faq/search"): "FaqSearchBody",
    ("post", "/knowledge-bases/{kb_id}/faq/entries"): "ImportBody",
    ("post", "/knowledge-bases/{kb_id}/faq/entry"): "FaqEntryIn",
    ("delete", "/knowledge-bases/{kb_id}/faq/entries"): "DeleteBody",
    ("post", "/evaluation"): "EvaluationRequest",
    ("put", "/initialization/config/{kb_id}"): "KBModelConfigRequest",
    ("put", "/tenants/kv/storage-engine-config"): "StorageEngineConfigRequest",
}

# (method, path) → the response component and the resource model found in its ``data``
RESPONSE_MODELS = {
    ("get", "/knowledge-bases"): ("Envelope_list_KnowledgeBaseOut__", "KnowledgeBaseOut"),
    ("post", "/knowledge-bases"): ("Envelope_KnowledgeBaseOut_", "KnowledgeBaseOut"),
    ("get", "/knowledge-bases/{kb_id}/knowledge"): ("PageEnvelope_KnowledgeOut_", "KnowledgeOut"),
    ("get", "/knowledge/{knowledge_id}"): ("Envelope_KnowledgeOut_", "KnowledgeOut"),
    ("get", "/chunks/{knowledge_id}"): ("PageEnvelope_ChunkOut_", "ChunkOut"),
    ("get", "/knowledge-bases/{kb_id}/tags"): ("Envelope_NestedPage_TagOut__", "NestedPage_TagOut_"),
    ("get", "/models"): ("Envelope_list_ModelOut__", "ModelOut"),
    ("get", "/sessions"): ("PageEnvelope_SessionOut_", "SessionOut"),
    ("get", "/messages/{session_id}/load"): ("Envelope_list_MessageOut__", "MessageOut"),
    ("get", "/agents"): ("Envelope_list_AgentConfig__", "AgentConfig"),
    ("get", "/mcp-services"): ("Envelope_list_MCPServiceOut__", "MCPServiceOut"),
    ("post", "/knowledge-search"): ("Envelope_list_SearchResult__", "SearchResult"),
    ("get", "/knowledge-bases/{kb_id}/faq/entries"): ("Envelope_NestedPage_FaqEntryOut__",
                                                      "NestedPage_FaqEntryOut_"),
    ("delete", "/knowledge-bases/{kb_id}"): ("Done", None),
    ("get", "/evaluation"): ("Envelope_EvaluationDetailOut_", "EvaluationDetailOut"),
}

# WeKnora field names a client reads from each resource (a sample, not the whole record)
FIELDS = {
    "KnowledgeBaseOut": {"id", "name", "type", "chunking_config", "config", "knowledge_count",
                         "embedding_model_id"},
    "KnowledgeOut": {"id", "knowledge_base_id", "title", "parse_status", "file_name", "storage_size",
                     "tag_id"},
    "ChunkOut": {"id", "knowledge_id", "content", "chunk_index", "chunk_type", "is_enabled", "status"},
    "TagOut": {"id", "name", "color", "knowledge_count", "chunk_count"},
    "ModelOut": {"id", "name", "type", "source", "parameters", "credentials", "is_default"},
    "MCPServiceOut": {"id", "name", "transport_type", "url", "auth_config", "enabled"},
    "SessionOut": {"id", "title", "is_pinned", "agent_id", "created_at"},
    "MessageOut": {"id", "session_id", "role", "content", "knowledge_references", "is_completed"},
    "SearchResult": {"id", "content", "knowledge_id", "score", "match_type"},
    "CreateKnowledgeBaseRequest": {"name", "chunking_config", "embedding_model_id", "faq_config"},
    "UpdateKnowledgeBaseRequest": {"name", "config"},
    "MCPServiceRequest": {"name", "transport_type", "url", "auth_config", "stdio_config"},
    "ModelRequest": {"name", "type", "source", "parameters", "api_key"},
    "UpdateChunkRequest": {"content", "is_enabled", "image_info"},
    "ToolApprovalDecisionRequest": {"approved", "reason", "modified_args"},
    "EvaluationRequest": {"dataset_id", "knowledge_base_id", "chat_id", "rerank_id"},
    "EvaluationDetailOut": {"task", "params", "metric"},
    "FaqEntryOut": {"id", "standard_question", "similar_questions", "answers", "tag_id", "is_enabled"},
}


@pytest.fixture
async def spec(make_settings: Callable[..., Settings]) -> dict[str, Any]:
    app = create_app(make_settings())  # not started: the document needs no running services
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://knora.test") as http:
        r = await http.get("/openapi.json")
    assert r.status_code == 200
    document: dict[str, Any] = r.json()
    return document


def _ref_name(schema: dict[str, Any]) -> str:
    return str(schema["$ref"]).rsplit("/", 1)[-1]


def _refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref":
                yield str(value)
            else:
                yield from _refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value)


class TestOpenAPI:
    def test_no_route_reads_an_undocumented_body(self, spec: dict[str, Any]) -> None:
        for (method, path), model in REQUEST_MODELS.items():
            operation = spec["paths"][API + path][method]
            schema = operation["requestBody"]["content"]["application/json"]["schema"]
            assert _ref_name(schema) == model, (method, path)
            assert model in spec["components"]["schemas"], model

    def test_main_resources_document_their_envelope(self, spec: dict[str, Any]) -> None:
        schemas = spec["components"]["schemas"]
        for (method, path), (envelope, resource) in RESPONSE_MODELS.items():
            responses = spec["paths"][API + path][method]["responses"]
            ok = responses.get("200") or responses["201"]
            assert _ref_name(ok["content"]["application/json"]["schema"]) == envelope, (method, path)
            assert "success" in schemas[envelope]["properties"]
            if resource is not None:
                assert resource in {r.rsplit("/", 1)[-1] for r in _refs(schemas[envelope])}, envelope

    def test_models_name_weknora_fields(self, spec: dict[str, Any]) -> None:
        schemas = spec["components"]["schemas"]
        for model, fields in FIELDS.items():
            missing = fields - set(schemas[model]["properties"])
            assert not missing, (model, missing)

    def test_secrets_are_not_documented_as_returned(self, spec: dict[str, Any]) -> None:
        assert "api_key" not in spec["components"]["schemas"]["ModelOut"]["properties"]

    def test_every_reference_resolves(self, spec: dict[str, Any]) -> None:
        names = set(spec["components"]["schemas"])
        dangling = {r for r in _refs(spec) if r.rsplit("/", 1)[-1] not in names}
        assert not dangling
