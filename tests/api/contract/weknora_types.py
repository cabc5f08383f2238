"""The WeKnora types Knora returns, as WeKnora's Go SDK (``client/*.go``) and, where the SDK has no type of
its own, its server (``internal/types``) declare them: JSON field names, Go types, ``omitempty``.

Facts read from WeKnora's sources (v0.7 line), written in ``tests.api.contract.go``'s type language. Fields
added to WeKnora after the v0.7 line that its clients do not need are left out. Where the SDK declares a time
as a plain ``string`` (``Session.CreatedAt``, ``Model.CreatedAt``) the server's type is ``time.Time``, so the
contract asks for RFC 3339 there too: the web UI formats those values as dates.
"""

from __future__ import annotations

from tests.api.contract.go import ANY, BOOL, FLOAT, INT, STR, TIME, UINT, F, Map, Ptr, Slice, Struct

CHUNKING_CONFIG = Struct("ChunkingConfig", {
    "chunk_size": F(INT), "chunk_overlap": F(INT), "separators": F(Slice(STR))})
FAQ_CONFIG = Struct("FAQConfig", {"index_mode": F(STR), "question_index_mode": F(STR)})
IMAGE_PROCESSING_CONFIG = Struct("ImageProcessingConfig", {"model_id": F(STR)})
VLM_CONFIG = Struct("VLMConfig", {"enabled": F(BOOL), "model_id": F(STR)})
STORAGE_PROVIDER_CONFIG = Struct("StorageProviderConfig", {"provider": F(STR)})
STORAGE_CONFIG = Struct("StorageConfig", {k: F(STR) for k in (
    "secret_id", "secret_key", "region", "bucket_name", "app_id", "path_prefix", "provider")})
EXTRACT_CONFIG = Struct("ExtractConfig", {
    "enabled": F(BOOL), "text": F(STR, True), "tags": F(Slice(STR), True),
    "nodes": F(Slice(Struct("GraphNode", {"name": F(STR)})), True),
    "relations": F(Slice(Struct("GraphRelation", {"node1": F(STR), "node2": F(STR), "type": F(STR)})), True)})

KNOWLEDGE_BASE = Struct("KnowledgeBase", {
    "id": F(STR), "name": F(STR), "type": F(STR), "is_temporary": F(BOOL), "is_pinned": F(BOOL),
    "description": F(STR), "tenant_id": F(UINT), "chunking_config": F(CHUNKING_CONFIG),
    "image_processing_config": F(IMAGE_PROCESSING_CONFIG), "faq_config": F(Ptr(FAQ_CONFIG)),
    "embedding_model_id": F(STR), "summary_model_id": F(STR), "vlm_config": F(VLM_CONFIG),
    "storage_provider_config": F(Ptr(STORAGE_PROVIDER_CONFIG)), "storage_config": F(STORAGE_CONFIG),
    "extract_config": F(Ptr(EXTRACT_CONFIG)), "created_at": F(TIME), "updated_at": F(TIME),
    "knowledge_count": F(INT), "chunk_count": F(INT), "is_processing": F(BOOL), "processing_count": F(INT)})

KNOWLEDGE = Struct("Knowledge", {
    "id": F(STR), "tenant_id": F(UINT), "knowledge_base_id": F(STR), "tag_id": F(STR), "type": F(STR),
    "title": F(STR), "description": F(STR), "source": F(STR), "channel": F(STR), "parse_status": F(STR),
    "summary_status": F(STR), "enable_status": F(STR), "embedding_model_id": F(STR), "file_name": F(STR),
    "folder_path": F(STR), "file_type": F(STR), "file_size": F(INT), "file_hash": F(STR),
    "file_path": F(STR), "storage_size": F(INT), "metadata": F(ANY), "created_at": F(TIME),
    "updated_at": F(TIME), "processed_at": F(Ptr(TIME)), "error_message": F(STR)})

CHUNK = Struct("Chunk", {
    "id": F(STR), "seq_id": F(INT), "tenant_id": F(UINT), "knowledge_id": F(STR),
    "knowledge_base_id": F(STR), "tag_id": F(STR), "content": F(STR), "chunk_index": F(INT),
    "is_enabled": F(BOOL), "flags": F(INT), "status": F(INT), "start_at": F(INT), "end_at": F(INT),
    "pre_chunk_id": F(STR), "next_chunk_id": F(STR), "chunk_type": F(STR), "parent_chunk_id": F(STR),
    "relation_chunks": F(ANY), "indirect_relation_chunks": F(ANY), "metadata": F(ANY),
    "content_hash": F(STR), "image_info": F(STR), "created_at": F(TIME), "updated_at": F(TIME),
    "deleted_at": F(ANY)})

SEARCH_RESULT = Struct("SearchResult", {
    "id": F(STR), "content": F(STR), "knowledge_id": F(STR), "chunk_index": F(INT),
    "knowledge_title": F(STR), "start_at": F(INT), "end_at": F(INT), "seq": F(INT), "score": F(FLOAT),
    "match_type": F(INT), "chunk_type": F(STR), "image_info": F(STR), "metadata": F(Map(STR)),
    "knowledge_filename": F(STR), "knowledge_source": F(STR), "matched_content": F(STR, True),
    "knowledge_base_id": F(STR, True), "parent_chunk_id": F(STR, True), "sub_chunk_id": F(Slice(STR), True)})

SESSION = Struct("Session", {
    "id": F(STR), "tenant_id": F(UINT), "title": F(STR), "description": F(STR), "created_at": F(TIME),
    "updated_at": F(TIME)})

TOOL_RESULT = Struct("ToolResult", {
    "success": F(BOOL), "output": F(STR), "data": F(Map(ANY), True), "error": F(STR, True),
    "images": F(Slice(STR), True)})
TOOL_CALL = Struct("ToolCall", {
    "id": F(STR), "name": F(STR), "args": F(Map(ANY)), "result": F(Ptr(TOOL_RESULT)),
    "reflection": F(STR, True), "duration": F(INT)})
AGENT_STEP = Struct("AgentStep", {
    "iteration": F(INT), "thought": F(STR), "tool_calls": F(Slice(TOOL_CALL)), "timestamp": F(TIME)})

MESSAGE = Struct("Message", {
    "id": F(STR), "session_id": F(STR), "request_id": F(STR), "content": F(STR), "role": F(STR),
    "knowledge_references": F(Slice(Ptr(SEARCH_RESULT))), "agent_steps": F(Slice(AGENT_STEP), True),
    "is_completed": F(BOOL), "channel": F(STR, True), "created_at": F(TIME), "updated_at": F(TIME)})

LLM_TOOL_CALL = Struct("LLMToolCall", {
    "id": F(STR), "type": F(STR),
    "function": F(Struct("FunctionCall", {"name": F(STR), "arguments": F(STR)}))})
STREAM_RESPONSE = Struct("StreamResponse", {
    "id": F(STR), "response_type": F(STR), "content": F(STR), "done": F(BOOL),
    "knowledge_references": F(Slice(Ptr(SEARCH_RESULT)), True), "session_id": F(STR, True),
    "assistant_message_id": F(STR, True), "tool_calls": F(Slice(LLM_TOOL_CALL), True),
    "data": F(Map(ANY), True)})

MODEL = Struct("Model", {
    "id": F(STR), "tenant_id": F(UINT), "name": F(STR), "display_name": F(STR), "type": F(STR),
    "source": F(STR), "description": F(STR), "parameters": F(Map(ANY)), "is_default": F(BOOL),
    "created_at": F(TIME), "updated_at": F(TIME)})

AGENT_CONFIG = Struct("AgentConfig", {
    "agent_mode": F(STR), "agent_type": F(STR, True), "user_instructions": F(STR, True),
    "system_prompt_id": F(STR, True), "context_template_id": F(STR, True), "model_id": F(STR),
    "rerank_model_id": F(STR), "temperature": F(FLOAT), "max_completion_tokens": F(INT),
    "thinking": F(Ptr(BOOL)), "max_iterations": F(INT), "llm_call_timeout": F(INT, True),
    "allowed_tools": F(Slice(STR)), "mcp_selection_mode": F(STR), "mcp_services": F(Slice(STR)),
    "kb_selection_mode": F(STR), "knowledge_bases": F(Slice(STR)),
    "retrieve_kb_only_when_mentioned": F(BOOL), "image_upload_enabled": F(BOOL), "vlm_model_id": F(STR),
    "supported_file_types": F(Slice(STR)), "faq_priority_enabled": F(BOOL),
    "faq_direct_answer_threshold": F(FLOAT), "faq_score_boost": F(FLOAT), "web_search_enabled": F(BOOL),
    "web_search_max_results": F(INT), "multi_turn_enabled": F(BOOL), "history_turns": F(INT),
    "embedding_top_k": F(INT), "keyword_threshold": F(FLOAT), "vector_threshold": F(FLOAT),
    "rerank_top_k": F(INT), "rerank_threshold": F(FLOAT), "enable_query_expansion": F(BOOL),
    "enable_rewrite": F(BOOL), "fallback_strategy": F(STR), "fallback_response": F(STR)})

AGENT = Struct("Agent", {
    "id": F(STR), "name": F(STR), "description": F(STR), "avatar": F(STR), "is_builtin": F(BOOL),
    "tenant_id": F(UINT), "created_by": F(STR), "config": F(Ptr(AGENT_CONFIG)), "created_at": F(TIME),
    "updated_at": F(TIME), "creator_name": F(STR, True)})

TAG = Struct("KnowledgeTag", {
    "seq_id": F(INT),
    "id": F(STR), "tenant_id": F(UINT), "knowledge_base_id": F(STR), "name": F(STR), "color": F(STR),
    "sort_order": F(INT), "created_at": F(TIME), "updated_at": F(TIME)})

MESSAGE_SEARCH_RESULT = Struct("MessageSearchResult", {
    "items": F(Slice(Ptr(Struct("MessageSearchGroupItem", {
        "request_id": F(STR), "session_id": F(STR), "session_title": F(STR), "query_content": F(STR),
        "answer_content": F(STR), "score": F(FLOAT), "match_type": F(STR), "created_at": F(TIME)})))),
    "total": F(INT)})

_SPAN_FIELDS: dict[str, F] = {
    "knowledge_id": F(STR), "attempt": F(INT), "span_id": F(STR), "parent_span_id": F(STR, True),
    "name": F(STR), "kind": F(STR), "status": F(STR), "input": F(Map(ANY), True), "output": F(Map(ANY), True),
    "metadata": F(Map(ANY), True), "error_code": F(STR, True), "error_message": F(STR, True),
    "started_at": F(Ptr(TIME), True), "finished_at": F(Ptr(TIME), True), "duration_ms": F(INT, True),
    "created_at": F(TIME), "updated_at": F(TIME)}
# One level of children is checked (the trace is root → stage → subspan).
_CHILD_SPAN = Struct("KnowledgeSpanNode", _SPAN_FIELDS)
KNOWLEDGE_SPAN = Struct("KnowledgeSpanNode", _SPAN_FIELDS | {"children": F(Slice(Ptr(Struct(
    "KnowledgeSpanNode", _SPAN_FIELDS | {"children": F(Slice(Ptr(_CHILD_SPAN)), True)}))), True)})
KNOWLEDGE_PROCESSING_TRACE = Struct("KnowledgeProcessingTrace", {
    "knowledge_id": F(STR), "parse_status": F(STR), "current_attempt": F(INT), "current_stage": F(STR),
    "trace": F(Ptr(KNOWLEDGE_SPAN)), "last_error": F(Ptr(Struct("KnowledgeSpanError", {
        "stage": F(STR), "code": F(STR), "message": F(STR), "finished_at": F(Ptr(TIME), True)})), True)})

_FOLDER_FIELDS: dict[str, F] = {"path": F(STR), "name": F(STR), "document_count": F(INT),
                                "total_count": F(INT)}
KNOWLEDGE_FOLDER_TREE = Struct("KnowledgeFolderTree", {
    "root_document_count": F(INT), "total_document_count": F(INT),
    "folders": F(Slice(Ptr(Struct("KnowledgeFolderNode", _FOLDER_FIELDS | {
        "children": F(Slice(Ptr(Struct("KnowledgeFolderNode", _FOLDER_FIELDS))), True)}))))})
