"""OCR engines by name (``ParseOptions.ocr_engine``), loaded once per process on first use.

Engines run in the parser worker processes; loading one (its models come from its own PyPI package) takes a
second or two, so it happens only when a document first needs OCR, and the engine is then kept.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from knora.domain.registry import Registry, UnknownName
from knora.ports.ocr import OcrEngine, OcrUnavailable

OcrFactory = Callable[[], OcrEngine]

OCR_ENGINES: Registry[OcrFactory] = Registry("OCR engine", {
    "rapidocr": "knora.adapters.ocr.rapidocr:RapidOcrEngine",
})


@functools.cache
def load_engine(name: str) -> OcrEngine:
    """The engine called ``name``, built on first call; OcrUnavailable when it cannot load here."""
    try:
        factory = OCR_ENGINES.get(name)
        return factory()
    except ImportError as exc:
        raise OcrUnavailable(f"the OCR engine {name!r} is not installed ({exc})") from exc
    except UnknownName as exc:
        raise OcrUnavailable(f"there is no OCR engine {name!r} ({exc})") from exc
