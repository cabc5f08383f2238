"""Image files (png, jpeg, webp, tiff, bmp, gif): the text OCR reads in them, and the image itself kept for
the chunk viewer.

A TIFF's frames are its pages (at most ``MAX_FRAMES``); a GIF or an animated WebP gives its first frame. The
size is checked from the header before decoding (``_imaging``), so a 20,000 × 20,000 pixel image fails with
its size in the reason instead of taking gigabytes. Each page becomes a page span and one ``ParsedImage`` (a
PNG, or a JPEG for photos, at most 2048 pixels a side).

When OCR is off for the upload, cannot run here, or finds no text, the page's text is one line naming the
image, its size and why there is no text (so the image still becomes a document that can be found by name and
opened), and ``metadata["ocr"]`` is ``"none"`` with the reason in ``metadata["ocr_note"]``.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from knora.adapters.parsers._common import TextBuilder, file_stem, normalise_text
from knora.adapters.parsers._imaging import MAX_FRAMES, check_size, decode, encode, open_image, view_copy
from knora.ports.ocr import OcrEngine, OcrResult, OcrUnavailable
from knora.ports.parser import ParseContext, ParsedDocument, ParsedImage, ParseError

if TYPE_CHECKING:
    from PIL import Image

_MULTI_PAGE = ("TIFF",)
_PHOTO_FORMATS = ("JPEG", "MPO", "WEBP")


@runtime_checkable
class _ReadsPixels(Protocol):
    """An engine that takes decoded pixels (RapidOcrEngine does), saving a re-encode of each page."""

    def recognize_image(self, image: Image.Image) -> OcrResult: ...


class ImageParser:
    extensions: frozenset[str] = frozenset({"png", "jpg", "jpeg", "webp", "tiff", "tif", "bmp", "gif"})

    def __init__(self, ctx: ParseContext) -> None:
        self._ctx = ctx

    def parse(self, data: bytes, file_name: str) -> ParsedDocument:
        name = file_name.replace("\\", "/").rsplit("/", 1)[-1] or "image"
        image = open_image(data, what=f"image {name!r}")
        kind = image.format or "image"
        size = image.size
        engine, note = self._engine()
        budget = self._ctx.options.time_budget_seconds
        deadline = time.monotonic() + budget if budget > 0 else None
        builder = TextBuilder()
        skipped = [note] if engine is None and self._ctx.options.ocr else []
        notes: set[str] = set()
        read_by = "none"  # the engine's name once it has read text on some page
        pages = 0
        for page in range(1, MAX_FRAMES + 1):
            where = f"page {page} of {name!r}" if page > 1 else f"image {name!r}"
            if page > 1:
                if kind not in _MULTI_PAGE or not _seek(image, page - 1):
                    break
                check_size(image, what=where)
            pixels = decode(image, what=where)
            pages = page
            if engine is not None and deadline is not None and time.monotonic() > deadline:
                engine, note = None, f"OCR stopped before this page: its time budget of {budget:g} s was used"
                skipped.append(f"OCR of pages {page} and after: the time budget of {budget:g} s was used")
            text = ""
            if engine is not None:
                try:
                    text = _recognise(engine, pixels)
                except OcrUnavailable as exc:
                    engine, note = None, f"OCR is not available on this server ({exc})"
                    skipped.append(f"OCR of pages {page} and after: {exc}")
            view, mime, width, height = view_copy(pixels, prefer_jpeg=kind in _PHOTO_FORMATS)
            label = f"{name}, page {page}" if kind in _MULTI_PAGE else name
            picture = ParsedImage(data=view, mime=mime, width=width, height=height, name=label, ocr_text=text)
            if text and engine is not None:
                read_by = engine.name
                builder.add_image(picture, page=page)
            else:
                why = note or "no text was recognised in it"
                notes.add(why)
                start = len(builder.text) + (2 if builder.text else 0)
                builder.add(f"[Image {label}: {pixels.width} × {pixels.height} pixels, {kind}; {why}.]",
                            page=page)
                builder.images.append(picture.model_copy(update={"offset": start, "page": page}))
            del pixels
        if kind in _MULTI_PAGE and pages == MAX_FRAMES and _seek(image, MAX_FRAMES):
            skipped.append(f"pages after {MAX_FRAMES}: a TIFF is read up to {MAX_FRAMES} pages")
        metadata = {"image_format": kind, "image_width": str(size[0]), "image_height": str(size[1]),
                    "image_pages": str(pages), "ocr": read_by}
        if notes:
            metadata["ocr_note"] = "; ".join(sorted(notes))
        return ParsedDocument(title=file_stem(file_name), text=builder.text, metadata=metadata,
                              pages=builder.pages, images=builder.images, skipped=skipped)

    def _engine(self) -> tuple[OcrEngine | None, str]:
        """The OCR engine, or None and why there is none."""
        if not self._ctx.options.ocr:
            return None, "OCR was turned off for this upload"
        try:
            engine = self._ctx.ocr()
        except OcrUnavailable as exc:
            return None, f"OCR is not available on this server ({exc})"
        if engine is None:
            return None, "no OCR engine is configured"
        return engine, ""


def _seek(image: Image.Image, frame: int) -> bool:
    """Moves to ``frame``; False past the last one (or when the frame cannot be reached)."""
    try:
        image.seek(frame)
    except EOFError:
        return False
    except (OSError, ValueError, SyntaxError) as exc:
        raise ParseError(f"page {frame + 1} of the TIFF is damaged and cannot be read: {exc}") from exc
    return True


def _recognise(engine: OcrEngine, pixels: Image.Image) -> str:
    if isinstance(engine, _ReadsPixels):
        result = engine.recognize_image(pixels)
    else:
        data, _mime = encode(pixels)
        result = engine.recognize(data)
    return normalise_text(result.text)
