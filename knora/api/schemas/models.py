"""Model configurations: the write body (``api_key`` accepted) and the record returned (``api_key`` never)."""

from __future__ import annotations

from pydantic import BaseModel, Field
from pydantic.json_schema import SkipJsonSchema

from knora.api.schemas.wire import Bool, Obj, RequestBody, Str
from knora.domain.models import ModelConfig


class ModelRequest(RequestBody):
    name: Str = None
    display_name: Str = None
    type: Str = Field(None, description="KnowledgeQA | Embedding | Rerank | VLLM | ASR")
    source: Str = Field(None, description="local | remote")
    description: Str = None
    parameters: Obj = None
    api_key: Str = Field(None, description="write-only")
    is_default: Bool = None


class APIKeyState(BaseModel):
    configured: bool


class Credentials(BaseModel):
    api_key: APIKeyState


class ModelOut(ModelConfig):
    api_key: SkipJsonSchema[str] = Field("", exclude=True)  # never returned
    credentials: Credentials
