"""Chunks: the edit body and the chunk record returned."""

from __future__ import annotations

from knora.api.schemas.wire import Bool, Int, ObjList, RequestBody, Str
from knora.domain.knowledge import Chunk


class UpdateChunkRequest(RequestBody):
    content: Str = None
    chunk_index: Int = None
    is_enabled: Bool = None
    start_at: Int = None
    end_at: Int = None
    image_info: ObjList = None


class ChunkOut(Chunk):
    status: int  # WeKnora's chunk status: 2 indexed, 1 not yet
