"""The model settings page's bodies and answers (``knora.api.routes.model_checks``): WeKnora's camelCase
field names, as its model editor sends them."""

from __future__ import annotations

from pydantic import BaseModel, Field

from knora.api.schemas.wire import Int, RequestBody, Str


class ModelCheckRequest(RequestBody):
    modelName: Str = None  # noqa: N815 (WeKnora's wire name)
    baseUrl: Str = None  # noqa: N815
    apiKey: Str = None  # noqa: N815
    provider: Str = None
    interfaceType: Str = None  # noqa: N815
    source: Str = Field(None, description="local | remote")
    dimension: Int = None
    modelId: Str = Field(None, description="a saved model whose stored key is used when apiKey is empty")  # noqa: N815


class CheckOut(BaseModel):
    available: bool
    message: str
    dimension: int | None = None


class ProviderOut(BaseModel):
    value: str
    label: str
    description: str
    defaultUrls: dict[str, str]  # noqa: N815
    modelTypes: list[str]  # noqa: N815
