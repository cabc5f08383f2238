"""Bodies and answers of the chunk revision routes (``knora.api.routes.chunk_revisions``), as WeKnora's
``ChunkRevision`` and ``RevertChunkRequest``."""

from __future__ import annotations

from pydantic import Field

from knora.api.schemas.wire import Int, RequestBody
from knora.domain.knowledge import ChunkRevision


class RevertChunkRequest(RequestBody):
    revision: Int = Field(None, description="the revision whose content becomes current again")
    expected_revision: Int = Field(None, description="the content_revision reverted from; another edit: 409")


class ChunkRevisionOut(ChunkRevision):
    editor_id: str = ""
