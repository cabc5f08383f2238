from __future__ import annotations

from typing import Protocol, runtime_checkable

from pydantic import BaseModel


class OcrLine(BaseModel):
    """One recognised line: its text, the engine's confidence (0–1) and its box (left, top, right, bottom in
    pixels of the image given)."""

    text: str
    confidence: float
    box: tuple[float, float, float, float]


class OcrResult(BaseModel):
    lines: list[OcrLine]

    @property
    def text(self) -> str:
        """Lines in reading order (top to bottom, then left to right within a row), one per line."""
        return "\n".join(line.text for line in self.lines if line.text.strip())


@runtime_checkable
class OcrEngine(Protocol):
    """Text recognition on one image. Runs inside a parser worker process (never on the event loop): the
    worker's memory cap and the document's time limit bound it. Engines load their models from their own
    installed package, never from the network."""

    name: str

    def recognize(self, image: bytes) -> OcrResult:
        """``image`` is an encoded image (PNG, JPEG …). Raises ``OcrUnavailable`` when the engine cannot run
        here, ``ParseError`` for an image it cannot read."""
        ...


class OcrUnavailable(Exception):
    """The configured OCR engine cannot run on this install (its package is missing or failed to load)."""
