"""Images found inside a document (slide pictures, ``data:`` URIs in Markdown/HTML, pictures in OpenDocument
files): validated with Pillow, bounded in number, bytes and pixels, OCR'd when the upload has OCR on.

One ``ImageCollector`` per parse: it counts what it kept, remembers why it left images out (one line per
reason in ``skipped``, with a count, so 5,000 tiny icons give one line, not 5,000), loads the OCR engine on
first use and stops OCR once the upload's time budget is spent. Nothing here reads the network.
"""

from __future__ import annotations

import io
import time
import warnings
from collections import Counter

from knora.adapters.parsers._common import TextBuilder
from knora.domain.document import PageKind
from knora.ports.ocr import OcrEngine
from knora.ports.parser import ParseContext, ParsedImage

MAX_IMAGES = 200  # per document
MAX_IMAGE_BYTES = 20 * 1024 * 1024  # one encoded image
MAX_IMAGE_PIXELS = 40_000_000  # width × height; a 20,000 × 20,000 picture is 400 M
MIN_IMAGE_SIDE = 32  # icons, bullets and spacer pixels carry nothing worth keeping

# Formats kept as they are; anything else Pillow reads (BMP, TIFF …) is re-encoded as PNG for OCR and viewers.
_KEPT = {"PNG": "image/png", "JPEG": "image/jpeg", "WEBP": "image/webp", "GIF": "image/gif"}


class ImageCollector:
    """Turns encoded image bytes into ``ParsedImage`` (or None with a reason in ``skipped``)."""

    def __init__(self, ctx: ParseContext, *, max_images: int = MAX_IMAGES,
                 max_bytes: int = MAX_IMAGE_BYTES, max_pixels: int = MAX_IMAGE_PIXELS,
                 min_side: int = MIN_IMAGE_SIDE) -> None:
        self.ctx = ctx
        self.max_images = max_images
        self.max_bytes = max_bytes
        self.max_pixels = max_pixels
        self.min_side = min_side
        self.kept = 0
        self._reasons: Counter[str] = Counter()
        self._engine: OcrEngine | None = None
        self._ocr_off = not ctx.options.ocr
        budget = ctx.options.time_budget_seconds
        self._deadline = time.monotonic() + budget if budget > 0 else None

    def skip(self, reason: str) -> None:
        self._reasons[reason] += 1

    @property
    def skipped(self) -> list[str]:
        """One line per reason: "3 images left out: smaller than 32 px"."""
        out = []
        for reason, n in self._reasons.items():
            out.append(f"{n} image{'s' if n != 1 else ''} {reason}")
        return out

    def image(self, data: bytes, name: str = "") -> ParsedImage | None:
        """The validated image (OCR text filled in when OCR is on), or None (reason recorded)."""
        if self.kept >= self.max_images:
            self.skip(f"left out: more than {self.max_images} images in the document")
            return None
        if len(data) > self.max_bytes:
            self.skip(f"left out: larger than {self.max_bytes // (1024 * 1024)} MB")
            return None
        from PIL import Image, UnidentifiedImageError

        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # DecompressionBombWarning: we apply our own bound below
                with Image.open(io.BytesIO(data)) as img:
                    width, height = img.size
                    fmt = (img.format or "").upper()
                    if width * height > self.max_pixels:
                        self.skip(f"left out: more than {self.max_pixels} pixels")
                        return None
                    if min(width, height) < self.min_side:
                        self.skip(f"left out: smaller than {self.min_side} px")
                        return None
                    if fmt in _KEPT:
                        img.verify()  # reads the whole stream: truncated or corrupt data fails here
                        mime = _KEPT[fmt]
                    else:
                        img.load()
                        out = io.BytesIO()
                        img.convert("RGBA" if "A" in img.getbands() else "RGB").save(out, "PNG")
                        data, mime = out.getvalue(), "image/png"
        except (UnidentifiedImageError, Image.DecompressionBombError):
            self.skip("left out: not an image format this install reads")
            return None
        except (OSError, ValueError, SyntaxError, EOFError):
            self.skip("left out: damaged image data")
            return None
        self.kept += 1
        return ParsedImage(data=data, mime=mime, width=width, height=height, name=name,
                           ocr_text=self._recognize(data))

    def _recognize(self, data: bytes) -> str:
        if self._ocr_off:
            return ""
        if self._deadline is not None and time.monotonic() > self._deadline:
            self.skip("not OCR'd: the upload's time budget for OCR was spent")
            return ""
        if self._engine is None:
            try:
                self._engine = self.ctx.ocr()
            except Exception as exc:  # noqa: BLE001 - OcrUnavailable, an unknown engine name …
                self._ocr_off = True
                self.skip(f"not OCR'd: the OCR engine cannot run here ({exc})")
                return ""
            if self._engine is None:
                self._ocr_off = True
                return ""
        try:
            return self._engine.recognize(data).text
        except Exception as exc:  # noqa: BLE001 - one unreadable image must not fail the document
            self.skip(f"not OCR'd: {type(exc).__name__}")
            return ""

    def place(self, builder: TextBuilder, image: ParsedImage, *, page: int | None = None,
              kind: PageKind = "page") -> None:
        """Puts ``image`` in the text here: kept with its OCR text, or only its OCR text when the upload
        does not keep images."""
        if self.ctx.options.extract_images:
            builder.add_image(image, page=page, kind=kind)
        else:
            builder.add(image.ocr_text, page=page, kind=kind)
