"""Images found inside a document (slide pictures, ``data:`` URIs in Markdown/HTML, pictures in OpenDocument
files): validated with Pillow, bounded in number, bytes and pixels, OCR'd when the upload has OCR on.

One ``ImageCollector`` per parse: it counts what it kept, remembers why it left images out (one line per
reason in ``skipped``, with a count, so 5,000 tiny icons give one line, not 5,000), loads the OCR engine on
first use and stops OCR once the upload's time budget is spent. Nothing here reads the network.
"""

from __future__ import annotations

import base64
import binascii
import io
import re
import time
import warnings
from collections import Counter

from knora.adapters.parsers._common import TextBuilder
from knora.domain.document import PageKind
from knora.ports.ocr import OcrEngine
from knora.ports.parser import ParseContext, ParsedImage

MAX_IMAGES = 200  # per document
MAX_IMAGE_BYTES = 20 * 1024 * 1024  # one encoded image
MAX_TOTAL_IMAGE_BYTES = 64 * 1024 * 1024  # all kept images of one document (they travel back from the worker)
MAX_IMAGE_PIXELS = 40_000_000  # width × height; a 20,000 × 20,000 picture is 400 M
MIN_IMAGE_SIDE = 32  # icons, bullets and spacer pixels carry nothing worth keeping

# Formats kept as they are; anything else Pillow reads (GIF's first frame, WebP, BMP, TIFF …) is re-encoded as
# PNG, which every OCR engine and browser takes.
_KEPT = {"PNG": "image/png", "JPEG": "image/jpeg"}
_VECTOR = {"WMF", "EMF"}  # Office's vector pictures: Pillow reads the header, renders them only on Windows


def _size(n: int) -> str:
    return f"{n // (1024 * 1024)} MB" if n >= 1024 * 1024 else f"{n} bytes"


class ImageCollector:
    """Turns encoded image bytes into ``ParsedImage`` (or None with a reason in ``skipped``)."""

    def __init__(self, ctx: ParseContext, *, max_images: int = MAX_IMAGES,
                 max_bytes: int = MAX_IMAGE_BYTES, max_pixels: int = MAX_IMAGE_PIXELS,
                 min_side: int = MIN_IMAGE_SIDE, max_total_bytes: int = MAX_TOTAL_IMAGE_BYTES) -> None:
        self.ctx = ctx
        self.max_total_bytes = max_total_bytes
        self.kept_bytes = 0
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
            self.skip(f"left out: larger than {_size(self.max_bytes)}")
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
                    if fmt in _VECTOR:
                        self.skip("left out: vector pictures (WMF/EMF) are not rendered")
                        return None
                    if fmt in _KEPT:
                        img.verify()  # reads the whole stream: truncated or corrupt data fails here
                        mime = _KEPT[fmt]
                    else:
                        img.load()
                        out = io.BytesIO()
                        img.convert("RGBA" if "A" in img.getbands() else "RGB").save(out, "PNG")
                        data, mime = out.getvalue(), "image/png"
        except Image.DecompressionBombError:  # Pillow's own bound, hit at open() for absurd sizes
            self.skip(f"left out: more than {self.max_pixels} pixels")
            return None
        except UnidentifiedImageError:
            self.skip("left out: not an image format this install reads")
            return None
        except (OSError, ValueError, SyntaxError, EOFError):
            self.skip("left out: damaged image data")
            return None
        if self.kept_bytes + len(data) > self.max_total_bytes:
            self.skip(f"left out: the document's images pass {_size(self.max_total_bytes)} in all")
            return None
        self.kept += 1
        self.kept_bytes += len(data)
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


# ``data:`` URIs in Markdown and HTML. Only base64 image payloads are decoded; the payload is never left in
# the text. Bounded repetitions keep every pattern linear on hostile input.
_B64 = r"[A-Za-z0-9+/=]+"
DATA_URI = re.compile(r"data:image/[A-Za-z0-9.+-]{1,40}(?:;[A-Za-z0-9=.+_-]{1,100}){0,5};base64," + _B64)
_ANY_BASE64_URI = re.compile(r"data:[A-Za-z0-9./+-]{0,100}(?:;[A-Za-z0-9=.+_-]{1,100}){0,5};base64,"
                             r"[A-Za-z0-9+/=]{1000,}")
_MARK = re.compile("\ue000([0-9]{1,6})\ue001")


def decode_data_uri(uri: str, max_bytes: int) -> bytes | None:
    """The bytes of a base64 ``data:`` URI; None when it is not valid base64 or larger than ``max_bytes``."""
    _, base64_, payload = uri.partition(";base64,")
    if not base64_ or not payload.strip():
        return None
    if len(payload) // 4 * 3 > max_bytes:
        return None
    try:
        return base64.b64decode(payload + "=" * (-len(payload) % 4), validate=True)
    except (binascii.Error, ValueError):
        return None


class InlineImages:
    """Images written into a text document as ``data:`` URIs. ``mark`` swaps one for a private-use marker
    while the format's own parsing runs; ``build`` then puts a short placeholder ("[image: alt]") where the
    marker is and the image (with its OCR text) after the paragraph that held it."""

    def __init__(self, ctx: ParseContext) -> None:
        self.collector = ImageCollector(ctx)
        self._entries: list[tuple[str, ParsedImage | None]] = []

    def __bool__(self) -> bool:
        return bool(self._entries)

    def mark(self, uri: str, alt: str = "") -> str:
        alt = " ".join(alt.split())[:200]
        placeholder = f"[image: {alt}]" if alt else "[image]"
        if len(self._entries) >= 100_000:  # a file of nothing but tiny data: URIs
            return placeholder
        data = decode_data_uri(uri, self.collector.max_bytes)
        image: ParsedImage | None = None
        if data is None:
            too_big = len(uri) // 4 * 3 > self.collector.max_bytes
            self.collector.skip(f"left out: larger than {_size(self.collector.max_bytes)}"
                                if too_big else "left out: the data: URI is not a base64-encoded image")
        else:
            image = self.collector.image(data, alt)
        self._entries.append((placeholder, image))
        return f"\ue000{len(self._entries) - 1}\ue001"

    def resolve(self, text: str) -> str:
        """``text`` with every marker replaced by its placeholder (for titles)."""
        return _MARK.sub(lambda m: self._entry(m)[0], text)

    def _entry(self, match: re.Match[str]) -> tuple[str, ParsedImage | None]:
        i = int(match.group(1))
        return self._entries[i] if i < len(self._entries) else ("", None)

    @staticmethod
    def unmarked(text: str) -> str:
        """``text`` without the private-use characters the markers are made of (so none is forged)."""
        return text.replace("\ue000", "").replace("\ue001", "")

    def build(self, text: str) -> TextBuilder:
        """The document's text with placeholders, images placed after the paragraph that holds each."""
        builder = TextBuilder()
        pos = 0
        for match in _MARK.finditer(text):
            if match.start() < pos:
                continue  # already emitted with an earlier image's paragraph
            end = text.find("\n\n", match.end())
            end = len(text) if end < 0 else end
            paragraph = text[pos:end]
            builder.add(self.resolve(paragraph))
            for inner in _MARK.finditer(paragraph):
                image = self._entry(inner)[1]
                if image is not None:
                    self.collector.place(builder, image)
            pos = end
        builder.add(self.resolve(text[pos:]))
        return builder

    def mark_markdown(self, text: str) -> str:
        """Markdown's ``![alt](data:…)``, inline ``<img src="data:…">`` and any other base64 data: URI
        replaced by markers (any long non-image base64 URI by "[embedded data]")."""
        text = self.unmarked(text)
        text = _MD_IMAGE.sub(lambda m: self.mark(m.group("uri"), m.group("alt")), text)
        text = _HTML_IMG.sub(lambda m: self.mark(m.group("uri"), _alt_of(m.group(0))), text)
        text = DATA_URI.sub(lambda m: self.mark(m.group(0)), text)
        return _ANY_BASE64_URI.sub("[embedded data]", text)


_MD_IMAGE = re.compile(r"!\[(?P<alt>[^\]\n]{0,1000})\]\(\s{0,10}<?(?P<uri>" + DATA_URI.pattern
                       + r")>?(?:\s{1,10}(?:\"[^\"\n]{0,1000}\"|'[^'\n]{0,1000}'))?\s{0,10}\)")
_HTML_IMG = re.compile(r"<img\b[^>]{0,2000}?\bsrc\s{0,10}=\s{0,10}[\"'](?P<uri>" + DATA_URI.pattern
                       + r")[\"'][^>]{0,2000}>", re.IGNORECASE)
_ALT = re.compile(r"\balt\s{0,10}=\s{0,10}(?:\"([^\"]{0,1000})\"|'([^']{0,1000})')", re.IGNORECASE)


def _alt_of(tag: str) -> str:
    tag = DATA_URI.sub("", tag)
    match = _ALT.search(tag)
    return (match.group(1) or match.group(2) or "") if match else ""
