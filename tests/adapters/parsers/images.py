"""Test helpers for documents with pictures: PNGs drawn by Pillow, and an OCR engine that reports the size of
the image it was given (the real engine is its own adapter with its own tests; these tests check that images
reach OCR and where the OCR text lands in the document)."""

from __future__ import annotations

import io

from knora.ports.ocr import OcrEngine, OcrLine, OcrResult
from knora.ports.parser import ParseContext, ParseOptions


def png(width: int = 120, height: int = 60, colour: str = "navy") -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (width, height), colour).save(buf, "PNG")
    return buf.getvalue()


class SizeReader:
    """Reads "IMAGE <w>x<h>" in every image: proof that the decoded picture reached the engine."""

    name = "size-reader"

    def __init__(self) -> None:
        self.calls = 0

    def recognize(self, image: bytes) -> OcrResult:
        from PIL import Image

        self.calls += 1
        with Image.open(io.BytesIO(image)) as img:
            w, h = img.size
        return OcrResult(lines=[OcrLine(text=f"IMAGE {w}x{h}", confidence=1.0, box=(0, 0, w, h))])


def ocr_context(engine: OcrEngine | None = None, **options: object) -> ParseContext:
    reader = engine or SizeReader()
    return ParseContext(max_expanded_bytes=512 * 1024 * 1024, options=ParseOptions(**options),  # type: ignore[arg-type]
                        ocr_loader=lambda: reader)
