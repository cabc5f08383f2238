"""Chunks: the edit body and the chunk record returned."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, WithJsonSchema

from knora.api.schemas.wire import Bool, Int, RequestBody, Str
from knora.domain.knowledge import Chunk

# WeKnora sends ``image_info`` as JSON text (its ``Chunk.ImageInfo`` is a string); a list is accepted too.
ImageInfoIn = Annotated[object, WithJsonSchema({"anyOf": [
    {"type": "string", "description": "a JSON array of image objects as text; \"\" for none"},
    {"type": "array", "items": {"type": "object"}}]})]


class UpdateChunkRequest(RequestBody):
    content: Str = None
    chunk_index: Int = None
    is_enabled: Bool = None
    start_at: Int = None
    end_at: Int = None
    image_info: ImageInfoIn = None
    expected_revision: Int = Field(None, description="the content_revision edited; another edit since: 409")


class ChunkOut(Chunk):
    status: int  # WeKnora's chunk status: 2 indexed, 1 not yet
    image_info: str = Field("", description="JSON text of the chunk's images, \"\" when none")  # type: ignore[assignment]
