"""WeKnora's knowledge-base initialization config (``/initialization/config/:kbId``) and the storage
settings bodies: camelCase, as its web UI sends them."""

from __future__ import annotations

from pydantic import Field

from knora.api.schemas.wire import Obj, RequestBody, Str


class KBModelConfigRequest(RequestBody):
    llmModelId: Str = Field(None, description="the chat model (stored as summary_model_id); required")
    embeddingModelId: Str = None
    vlm_config: Obj = Field(None, description="refused when enabled: Knora has no multimodal ingestion")
    asr_config: Obj = Field(None, description="refused when enabled: Knora has no speech recognition")
    documentSplitting: Obj = Field(None, description="chunkSize, chunkOverlap, separators, "
                                                     "enableParentChild, parentChunkSize, childChunkSize, "
                                                     "strategy, parserEngineRules")
    multimodal: Obj = None
    storageProvider: Str = Field(None, description="'local'")
    storageBackendId: Str = Field(None, description="'builtin-local'")
    nodeExtract: Obj = None
    questionGeneration: Obj = None


class StorageEngineConfigRequest(RequestBody):
    default_provider: Str = Field(None, description="'local'")
    local: Obj = Field(None, description="{path_prefix: ''}: Knora stores under its data directory")
