"""Model-facing renderings (spec §4.7): handles instead of ids, caps, escaping."""

from __future__ import annotations

import pytest

from knora.ports.tool import ToolResult
from knora.services.agent.rendering import model_output
from knora.services.citations.registry import ReferenceRegistry

pytestmark = pytest.mark.unit
CHUNK = "0b5f2c1a-1111-4000-8000-00000000000a"
DOC = "0b5f2c1a-2222-4000-8000-00000000000b"
KB = "0b5f2c1a-3333-4000-8000-00000000000c"


def test_deep_read_groups_by_document_and_paginates() -> None:
    refs = ReferenceRegistry()
    out = model_output(ToolResult(data={"display_type": "knowledge_chunks_list", "total_chunks": 9,
                                        "fetched_chunks": 2, "page": 1, "page_size": 2, "results": [
        {"chunk_id": CHUNK, "knowledge_id": DOC, "knowledge_base_id": KB, "knowledge_title": "A & <B>",
         "chunk_index": 0, "content": "x < y"},
        {"chunk_id": CHUNK + "2", "knowledge_id": DOC, "knowledge_base_id": KB, "knowledge_title": "A & <B>",
         "chunk_index": 1, "content": "z"}]}), refs)
    assert out.startswith('<retrieval type="knowledge" mode="deep_read">')
    assert '<document id="d1" kb="b1" title="A &amp; &lt;B&gt;">' in out
    assert out.count("<document") == 1
    assert '<chunk id="c1" index="0" view="full" type="text">' in out
    assert "<content>x &lt; y</content>" in out
    assert '<pagination remaining="7" page="1" page_size="2" />' in out
    assert CHUNK not in out
    assert DOC not in out
    assert KB not in out


def test_web_search_caps_snippets_and_registers_pages() -> None:
    refs = ReferenceRegistry()
    out = model_output(ToolResult(data={"display_type": "web_search_results", "results": [
        {"title": "T", "url": "https://example.org/a", "snippet": "s" * 600, "content": "s" * 600}]}), refs)
    assert '<page id="w1" title="T">' in out
    assert '<match truncated="true">' + "s" * 500 + "</match>" in out
    assert "<content" not in out  # identical to the snippet
    assert refs.resolve("w1") is not None


def test_web_fetch_failures_get_next_steps() -> None:
    out = model_output(ToolResult(success=False, error="all failed",
                                  data={"display_type": "web_fetch_results",
        "pages": [{"url": "https://x.test/", "status": "failed", "error": "boom", "error_code": "network",
                   "retryable": True}]}), ReferenceRegistry())
    assert 'status="failed" retryable="true" error_code="network"' in out
    assert "=== Next Steps ===" in out


def test_failures_and_plain_outputs_are_compacted() -> None:
    refs = ReferenceRegistry()
    refs.register_chunk(CHUNK, knowledge_id=DOC)
    assert model_output(ToolResult.fail(f"chunk {CHUNK} is gone"), refs) == "Error: chunk c1 is gone"
    assert model_output(ToolResult(success=False), refs) == "Error: tool call failed"
    assert CHUNK not in model_output(ToolResult(output=f'{{"chunk_id": "{CHUNK}"}}'), refs)


def test_document_info_registers_documents() -> None:
    refs = ReferenceRegistry()
    out = model_output(ToolResult(data={"display_type": "document_info", "documents": [
        {"knowledge_id": DOC, "knowledge_base_id": KB, "title": "Guide", "type": "file", "file_type": "pdf",
         "chunk_count": 4, "description": "d"}]}), refs)
    assert '<document id="d1" title="Guide" type="file" file_type="pdf" chunk_count="4">' in out
