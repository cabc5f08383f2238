"""Documents (WeKnora "knowledge"): creation bodies, the update body and the document record returned."""

from __future__ import annotations

from pydantic import BaseModel, Field

from knora.api.schemas.wire import Bool, Obj, RequestBody, Str, StrList
from knora.domain.knowledge import Knowledge


class CreateFromURLRequest(RequestBody):
    url: Str = None
    title: Str = None
    file_name: Str = None
    file_type: Str = None
    tag_id: Str = None
    channel: Str = None
    enable_multimodel: Bool = None
    process_config: Obj = Field(None, description="WeKnora's KnowledgeProcessOverrides: enable_multimodel, "
                                "chunking_config, vlm_config, parser_engine_overrides {ocr, ocr_engine, "
                                "extract_images}")


class CreateManualRequest(RequestBody):
    title: Str = None
    content: Str = None
    status: Str = Field(None, description="draft | publish")
    tag_id: Str = None
    tag_ids: StrList = None
    channel: Str = None


class UpdateKnowledgeRequest(RequestBody):
    title: Str = None
    description: Str = None
    tag_id: Str = Field(None, description="null or empty removes the tag")
    metadata: Obj = None


class KnowledgeOut(Knowledge):
    summary_status: str = "none"
    storage_size: int
    folder_path: str = ""


class DeleteTask(BaseModel):
    task_id: str
