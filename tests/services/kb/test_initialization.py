"""``knora.services.kb.initialization``: WeKnora's camelCase initialization body → the knowledge-base change
``KnowledgeBaseService.update`` makes, and the knowledge base back in WeKnora's shape."""

from __future__ import annotations

from typing import Any

import pytest

from knora.domain.errors import ValidationFailed
from knora.domain.knowledge import ChunkingConfig, KnowledgeBase
from knora.domain.models import ModelConfig
from knora.services.kb import initialization as init

pytestmark = pytest.mark.unit

KB = KnowledgeBase(tenant_id=1, name="kb", extract_config={"enabled": True, "text": "kept"})


class TestKbChanges:
    def test_the_minimal_body(self) -> None:
        assert init.kb_changes({"llmModelId": " m "}, KB) == {
            "summary_model_id": "m", "storage_provider_config": {"provider": ""}, "storage_backend_id": ""}

    def test_splitting_fields_map_to_chunking_config(self) -> None:
        changes = init.kb_changes({"llmModelId": "m", "embeddingModelId": "e", "documentSplitting": {
            "chunkSize": 300, "chunkOverlap": 0, "separators": [], "enableParentChild": True,
            "parentChunkSize": 0, "childChunkSize": "128", "strategy": "auto",
            "parserEngineRules": [{"file_types": ["md"], "engine": ""}]}}, KB)
        assert changes["embedding_model_id"] == "e"
        # a size of 0 and an empty separator list mean "unchanged", as in WeKnora; an overlap of 0 is one
        assert changes["chunking_config"] == {"chunk_size": 300, "chunk_overlap": 0, "child_chunk_size": 128,
                                              "enable_parent_child": True, "strategy": "auto",
                                              "parser_engine_rules": [{"file_types": ["md"], "engine": ""}]}

    def test_extraction_off_keeps_the_rest_and_questions_are_capped(self) -> None:
        changes = init.kb_changes({"llmModelId": "m", "nodeExtract": {"enabled": False},
                                   "questionGeneration": {"enabled": True, "questionCount": 0}}, KB)
        assert changes["extract_config"] == {"enabled": False, "text": "kept"}
        assert changes["question_generation_config"] == {"enabled": True, "question_count": 3}

    @pytest.mark.parametrize("body", [
        {}, {"llmModelId": 3}, {"llmModelId": "  "},
        {"llmModelId": "m", "documentSplitting": {"chunkSize": True}},
        {"llmModelId": "m", "documentSplitting": {"chunkOverlap": -5}},
        {"llmModelId": "m", "documentSplitting": {"separators": [1]}},
        {"llmModelId": "m", "documentSplitting": {"strategy": 1}},
        {"llmModelId": "m", "documentSplitting": {"parserEngineRules": {"engine": "builtin"}}},
        {"llmModelId": "m", "documentSplitting": {"parserEngineRules": [{"file_types": "pdf"}]}},
        {"llmModelId": "m", "documentSplitting": {"parserEngineRules": [{"file_types": ["txt"],
                                                                         "engine": "docx"}]}},
        {"llmModelId": "m", "multimodal": {"enabled": True}},
        {"llmModelId": "m", "vlm_config": {"enabled": True}},
        {"llmModelId": "m", "asr_config": {"enabled": True}},
        {"llmModelId": "m", "nodeExtract": "on"},
    ])
    def test_refused(self, body: dict[str, Any]) -> None:
        with pytest.raises(ValidationFailed):
            init.kb_changes(body, KB)


class TestView:
    async def test_models_that_resolve_are_shown_without_secrets(self) -> None:
        chat = ModelConfig(id="c", tenant_id=1, name="qwen", type="KnowledgeQA", source="remote",
                           parameters={"base_url": "https://api.example.com/v1"}, api_key="secret")
        kb = KB.model_copy(update={"summary_model_id": "c", "embedding_model_id": "gone",
                                   "chunking_config": ChunkingConfig(chunk_size=256, chunk_overlap=20)})

        async def lookup(model_id: str) -> ModelConfig | None:
            return chat if model_id == "c" else None

        view = await init.view(kb, has_files=True, lookup=lookup)
        assert view["llm"] == {"source": "remote", "modelName": "qwen", "baseUrl": "https://api.example.com/v1",
                               "credentials": {"apiKey": True}}
        assert "secret" not in repr(view)
        assert "embedding" not in view  # a model that does not resolve is left out, as WeKnora does
        assert view["hasFiles"] is True
        assert view["documentSplitting"]["chunkSize"] == 256
        assert view["nodeExtract"]["text"] == "kept"
        assert view["questionGeneration"] == {"enabled": False}
