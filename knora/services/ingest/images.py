"""A parsed document's images after the parse: stored as blobs, served by
``GET /knowledge/:id/images/:name``, attached to the chunks that hold them (``Chunk.image_info``, WeKnora's
``ImageInfo``: url, original_url, start_pos, end_pos, caption, ocr_text) and, when captioned, indexed as
``image_caption`` chunks.

Blob keys sit under the document's folder (``<tenant>/<kb>/<knowledge>/images/<n>.<ext>``), so deleting the
document removes them with one prefix delete, and deleting the knowledge base removes them with its folder.

A caption chunk is a child of the first text chunk holding the image (``parent_chunk_id``), as WeKnora's
multimodal task makes it; it is not cut from the document text, so its ``start_at``/``end_at`` are the image's
offset (an empty span): the invariant ``text[start_at:end_at] == content`` holds for the text chunks, and
the document text is not changed by captions.
"""

from __future__ import annotations

import bisect
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from knora.domain.common import new_id
from knora.domain.knowledge import Chunk, ChunkType, Knowledge
from knora.ports.blobs import BlobStore
from knora.ports.parser import ParsedImage

EXTENSIONS = {"image/png": "png", "image/jpeg": "jpg", "image/jpg": "jpg", "image/gif": "gif",
              "image/webp": "webp", "image/bmp": "bmp", "image/tiff": "tiff"}
MIME_TYPES = {ext: mime for mime, ext in EXTENSIONS.items() if mime != "image/jpg"}
_HOLDERS = (ChunkType.TEXT, ChunkType.PARENT_TEXT)


@dataclass
class StoredImage:
    index: int
    name: str  # "<n>.<ext>", the last part of the URL and of the blob key
    url: str
    image: ParsedImage
    caption: str = ""


def image_prefix(k: Knowledge) -> str:
    return f"{k.tenant_id}/{k.knowledge_base_id}/{k.id}/images"


def image_url(knowledge_id: str, name: str) -> str:
    return f"/api/v1/knowledge/{knowledge_id}/images/{name}"


def image_key(k: Knowledge, name: str) -> str:
    return f"{image_prefix(k)}/{name}"


async def store_images(blobs: BlobStore, k: Knowledge, images: Sequence[ParsedImage],
                       limit: int) -> list[StoredImage]:
    """Puts up to ``limit`` images (those of a known image type) into the blob store, replacing what an
    earlier parse of the document stored."""
    await blobs.delete_prefix(image_prefix(k))
    stored: list[StoredImage] = []
    for img in images:
        if len(stored) >= limit:
            break
        ext = EXTENSIONS.get(img.mime.lower())
        if ext is None or not img.data:
            continue
        name = f"{len(stored)}.{ext}"
        await blobs.put(image_key(k, name), img.data)
        stored.append(StoredImage(index=len(stored), name=name, url=image_url(k.id, name), image=img))
    return stored


def image_info(s: StoredImage, chunk_start: int) -> dict[str, Any]:
    """WeKnora's ``ImageInfo`` for one image in a chunk; positions are relative to the chunk's content (the
    image is a point in the text: start_pos == end_pos)."""
    pos = max(0, s.image.offset - chunk_start)
    return {"url": s.url, "original_url": s.url, "start_pos": pos, "end_pos": pos, "caption": s.caption,
            "ocr_text": s.image.ocr_text, "width": s.image.width, "height": s.image.height,
            **({"page": s.image.page} if s.image.page is not None else {})}


def _holders(chunks: Sequence[Chunk], offset: int) -> list[Chunk]:
    """The text (and parent) chunks whose span holds ``offset``; when none does (the offset falls between
    chunks, or at the very end), the nearest text chunk before it, else the first."""
    inside = [c for c in chunks if c.chunk_type in _HOLDERS and c.start_at <= offset < c.end_at]
    if inside:
        return inside
    texts = sorted((c for c in chunks if c.chunk_type == ChunkType.TEXT), key=lambda c: c.start_at)
    if not texts:
        return []
    i = bisect.bisect_right([c.start_at for c in texts], offset) - 1
    return [texts[max(i, 0)]]


def stored_names(k: Knowledge, chunks: Sequence[Chunk]) -> list[str]:
    """The names of ``k``'s stored images, read from its chunks' ``image_info`` (every stored image is on
    at least one chunk)."""
    prefix = image_url(k.id, "")
    names = {str(i.get("url", ""))[len(prefix):] for c in chunks for i in c.image_info
             if str(i.get("url", "")).startswith(prefix)}
    return sorted(n for n in names if n and "/" not in n)


async def copy_images(blobs: BlobStore, src: Knowledge, dst: Knowledge, names: Sequence[str]) -> None:
    """Puts ``src``'s images under ``dst`` (a copied document, or the same one in another knowledge base);
    an image missing from the store is skipped."""
    for name in names:
        try:
            data = await blobs.get(image_key(src, name))
        except KeyError:
            continue
        await blobs.put(image_key(dst, name), data)


def with_urls_of(c: Chunk, old_knowledge_id: str, new_knowledge_id: str) -> list[dict[str, Any]]:
    """``c.image_info`` with its image URLs pointing at the copied document."""
    old, new = image_url(old_knowledge_id, ""), image_url(new_knowledge_id, "")
    return [{**i, **{key: new + str(i[key])[len(old):] for key in ("url", "original_url")
                     if str(i.get(key, "")).startswith(old)}} for i in c.image_info]


def attach_images(k: Knowledge, chunks: list[Chunk], stored: Sequence[StoredImage]) -> list[Chunk]:
    """Sets ``image_info`` on the chunks holding each image and returns the ``image_caption`` chunks for
    the captioned ones (children of the first text chunk holding the image; of none when the document has no
    text chunk)."""
    captions: list[Chunk] = []
    next_index = max((c.chunk_index for c in chunks), default=-1) + 1
    for s in stored:
        holders = _holders(chunks, s.image.offset)
        for c in holders:
            c.image_info.append(image_info(s, c.start_at))
        holder = next((c for c in holders if c.chunk_type == ChunkType.TEXT), None)
        if not s.caption:
            continue
        captions.append(Chunk(
            id=new_id(), tenant_id=k.tenant_id, knowledge_base_id=k.knowledge_base_id, knowledge_id=k.id,
            tag_id=k.tag_id, content=s.caption, chunk_index=next_index, chunk_type=ChunkType.IMAGE_CAPTION,
            parent_chunk_id=holder.id if holder is not None else None,  # none: an image-only document
            start_at=s.image.offset, end_at=s.image.offset,
            content_hash=hashlib.sha256(s.caption.encode()).hexdigest(),
            metadata=dict(holder.metadata) if holder is not None else {},
            image_info=[image_info(s, s.image.offset)]))
        next_index += 1
    return captions
