"""Images drawn on PDF pages, taken out as image files within a per-document budget.

Icons and rules (tiny images) are left out, an image shown on many pages (a logo) is kept once, and the count,
the total bytes and each image's pixel count are capped, so a PDF full of huge images cannot fill memory; what
was left out is counted and named in the document's ``skipped``.
"""

from __future__ import annotations

import hashlib
import io
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from knora.ports.parser import ParsedImage

if TYPE_CHECKING:
    import pypdfium2

MAX_IMAGES = 50
MAX_TOTAL_BYTES = 32 * 1024 * 1024
MAX_PIXELS = 25_000_000  # decoded, an RGB image this size is 75 MB
MAX_SIDE = 2048  # a re-encoded image is scaled down to this (a JPEG is kept as the PDF holds it)
MIN_SIDE_PX = 48  # smaller than this on either side: an icon, a bullet, a rule
MIN_SIDE_PT = 24  # shown smaller than a third of an inch


@dataclass
class ImageBudget:
    """What one document's images may cost, and what was left out."""

    kept: int = 0
    bytes: int = 0
    seen: set[str] = field(default_factory=set)
    left_out: Counter[str] = field(default_factory=Counter)
    unread: Counter[str] = field(default_factory=Counter)

    def not_read(self, reason: str) -> None:
        self.unread[reason] += 1

    def summary(self) -> list[str]:
        lines = [f"{n} image{'s' if n > 1 else ''} left out: {why}" for why, n in self.left_out.items()]
        lines += [f"text not read in {n} image{'s' if n > 1 else ''}: {why}"
                  for why, n in self.unread.items()]
        return lines


def extract_image(obj: pypdfium2.PdfImage, budget: ImageBudget,
                  page_top: float) -> tuple[ParsedImage, float] | None:
    """The image as PNG (JPEG when the PDF holds it as JPEG) and its top edge in points below the page's top;
    None when it is tiny, a repeat, or over the budget (then counted in ``budget``)."""
    import pypdfium2 as pdfium

    try:
        width, height = obj.get_px_size()
        x0, y0, x1, y1 = obj.get_bounds()
    except pdfium.PdfiumError:
        budget.left_out["unreadable"] += 1
        return None
    if min(width, height) < MIN_SIDE_PX or min(x1 - x0, y1 - y0) < MIN_SIDE_PT:
        budget.left_out["small (icons, rules)"] += 1
        return None
    if width * height > MAX_PIXELS:
        budget.left_out[f"larger than {MAX_PIXELS // 1_000_000} Mpx"] += 1
        return None
    if budget.kept >= MAX_IMAGES:
        budget.left_out[f"more than {MAX_IMAGES} in the document"] += 1
        return None
    try:
        data, mime = _encoded(obj)
    except (pdfium.PdfiumError, OSError, ValueError):
        budget.left_out["unreadable"] += 1
        return None
    digest = hashlib.sha256(data).hexdigest()
    if digest in budget.seen:
        return None  # the same image again (a logo on every page): kept where it first appeared
    if budget.bytes + len(data) > MAX_TOTAL_BYTES:
        budget.left_out[f"the document's images passed {MAX_TOTAL_BYTES >> 20} MB"] += 1
        return None
    budget.seen.add(digest)
    budget.kept += 1
    budget.bytes += len(data)
    shown_w, shown_h = _size(data, (width, height))
    return ParsedImage(data=data, mime=mime, width=shown_w, height=shown_h), page_top - y1


def _size(data: bytes, fallback: tuple[int, int]) -> tuple[int, int]:
    from PIL import Image

    try:
        with Image.open(io.BytesIO(data)) as image:
            return image.size
    except OSError:
        return fallback


def _encoded(obj: pypdfium2.PdfImage) -> tuple[bytes, str]:
    if obj.get_filters() == ["DCTDecode"]:
        return bytes(obj.get_data(decode_simple=False)), "image/jpeg"
    bitmap = obj.get_bitmap(render=False)
    try:
        image = bitmap.to_pil()
        if image.mode not in ("RGB", "RGBA", "L", "LA", "1", "P"):
            image = image.convert("RGB")
        if max(image.size) > MAX_SIDE:
            image.thumbnail((MAX_SIDE, MAX_SIDE))  # enough for a caption, a chunk viewer and OCR
        buf = io.BytesIO()
        image.save(buf, format="PNG")
    finally:
        bitmap.close()
    return buf.getvalue(), "image/png"
