"""Image captions from a VLM (a ``vlm`` model of ``/models``, OpenAI-compatible vision messages).

Each image is sent on its own as a ``data:`` URL beside a short instruction; at most ``concurrency`` calls run
at once and at most ``max_images`` images of a document are captioned. A failed call is recorded (the image
keeps an empty caption and the document names the failures), never a failed document: the text is there.
"""

from __future__ import annotations

import asyncio
import base64
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from knora.ports.chat import ChatMessage, ChatModel, ChatOptions
from knora.services.ingest.images import StoredImage

log = logging.getLogger(__name__)

CAPTION_PROMPT = (
    "Describe this image from a document so that it can be found by a text search: what it shows, any "
    "text, numbers or labels in it, and what a chart or diagram says. Answer in the language of the text "
    "in the image (English when there is none), in at most five sentences, with no preamble.")
CAPTION_MAX_CHARS = 2000
MAX_IMAGE_BYTES = 10 * 1024 * 1024  # larger images are not sent (most vision APIs refuse them anyway)


def data_url(data: bytes, mime: str) -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


@dataclass
class CaptionReport:
    captioned: int = 0
    failed: list[str] = field(default_factory=list)  # "image 3: reason"
    left_out: int = 0  # over the per-document count

    def summary(self) -> str:
        parts = [f"{self.captioned} captioned"]
        if self.failed:
            parts.append(f"{len(self.failed)} failed ({'; '.join(self.failed[:3])})")
        if self.left_out:
            parts.append(f"{self.left_out} not captioned (over the limit per document)")
        return ", ".join(parts)


async def caption_images(model: ChatModel, images: Sequence[StoredImage], *, concurrency: int,
                         max_images: int, timeout_seconds: float) -> CaptionReport:
    """Sets ``caption`` on up to ``max_images`` of ``images``."""
    report = CaptionReport(left_out=max(0, len(images) - max_images))
    gate = asyncio.Semaphore(max(1, concurrency))
    opts = ChatOptions(temperature=0.1, max_tokens=400, thinking=False, extra={"purpose": "image_caption"})

    async def one(s: StoredImage) -> None:
        if len(s.image.data) > MAX_IMAGE_BYTES:
            report.failed.append(f"image {s.index + 1}: larger than {MAX_IMAGE_BYTES // (1024 * 1024)} MB")
            return
        async with gate:
            message = ChatMessage(role="user", content=CAPTION_PROMPT,
                                  images=[data_url(s.image.data, s.image.mime)])
            try:
                resp = await asyncio.wait_for(model.chat([message], opts), timeout_seconds or None)
            except Exception as exc:  # noqa: BLE001 - recorded, the document goes on without this caption
                reason = str(exc) or type(exc).__name__
                log.warning("captioning image %s failed: %s", s.name, reason)
                report.failed.append(f"image {s.index + 1}: {reason[:200]}")
                return
            caption = resp.content.strip()[:CAPTION_MAX_CHARS]
            if caption:
                s.caption = caption
                report.captioned += 1
            else:
                report.failed.append(f"image {s.index + 1}: the model answered nothing")

    await asyncio.gather(*(one(s) for s in images[:max_images]))
    return report
