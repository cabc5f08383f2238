"""RapidOCR (PaddleOCR's PP-OCR models on onnxruntime), English and Chinese in one model, offline.

The detection and recognition models ship inside the ``rapidocr`` wheel (``rapidocr/models``); they are named
by path, and rapidocr's downloader is replaced by one that refuses, so a missing model ends as
``OcrUnavailable`` instead of a download. The engine runs in a parser worker process beside the chat server
on a small machine: onnxruntime and OpenCV get one thread each, rapidocr's coloured INFO logging is silenced.

What the engine adds to rapidocr's own pipeline:

- bounded input: an image is decoded through ``_imaging`` (size checked from the header), scaled so its
  longer side is at most ``MAX_SIDE``, and a very tall image (a long screenshot, a receipt) is read in
  overlapping strips so that its text is not shrunk to nothing. Tiny images are not enlarged: rapidocr pads
  and scales each line to its recogniser's 48 pixels itself, and enlarging 576-pixel-wide screenshots of 8-11
  px text 1.1× (Lanczos) changed character accuracy by -0.012 to +0.004, i.e. nothing;
- detection on at most ``DET_PIXELS`` pixels (its time and memory grow with the area; recognition still
  reads the full-resolution crops), recognition one line per call (a batch of six long lines took ~350 MB
  more at peak);
- onnxruntime's "bad_alloc" (the worker's address-space cap reached) raised as MemoryError, so the worker
  reports running out of memory and is replaced;
- no orientation classifier: it turns some upright English lines upside down (0.82 character accuracy with
  it, 1.0 without, on the scanned pages of ``benchmarks/parse.py``);
- lines under ``min_confidence`` dropped, and low-confidence lines without a letter, digit or CJK character
  (dust read as "-" or ".");
- reading order: lines sorted top to bottom; boxes on one row joined left to right into one line.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from knora.adapters.parsers._imaging import decode, open_image, shrink
from knora.ports.ocr import OcrLine, OcrResult, OcrUnavailable

if TYPE_CHECKING:
    from PIL import Image

MAX_SIDE = 4096  # longer side handed to the recogniser (an A4 page at 300 dpi is 2480 × 3508)
# Detection input, in pixels (its longer side follows from the image's shape). Detection is where the memory
# goes (its activations grow with the area): on an A4 page at 200 dpi, a 1280-pixel longer side (1.15 MP)
# adds ~390 MB of address space at peak, 960 (0.65 MP) ~210 MB, and 960 still reads 8 pt text on that page
# exactly (character accuracy 1.0, English and Chinese). Bounding the area rather than the side keeps a wide
# image (a spreadsheet screenshot) from being squeezed to a few pixels of height.
DET_PIXELS = 700_000
DET_MIN_SIDE = 960
STRIP_RATIO = 2.5  # a page taller than this many widths is read in strips of 1.5 widths
MIN_CONFIDENCE = 0.5
REC_BATCH = 1  # lines recognised per onnxruntime call (see __init__)
# Preference order when several models are in the package (newer rapidocr wheels ship newer models).
_DET_MODELS = ("PP-OCRv6_det_small.onnx", "ch_PP-OCRv5_det_mobile.onnx", "ch_PP-OCRv4_det_infer.onnx")
_REC_MODELS = ("PP-OCRv6_rec_small.onnx", "ch_PP-OCRv5_rec_mobile.onnx", "ch_PP-OCRv4_rec_infer.onnx")
_LOGGER = "RapidOCR"


def _quiet() -> None:
    """rapidocr logs every model load at INFO, in colour, on its own handler (propagation off)."""
    logging.getLogger(_LOGGER).setLevel(logging.ERROR)


def _pick(folder: Path, names: tuple[str, ...], kind: str) -> Path:
    for name in names:
        if (folder / name).is_file():
            return folder / name
    found = sorted(p.name for p in folder.glob(f"*{kind}*.onnx"))
    if found:
        return folder / found[-1]
    raise OcrUnavailable(f"rapidocr's {kind} model is not in its package ({folder}); reinstall rapidocr "
                         "(models are never downloaded)")


def _forbid_downloads() -> None:
    """rapidocr fetches a model or dictionary it cannot find; here that is an error, never a request."""
    from rapidocr.utils import download_file

    def refuse(_cls: object, params: Any) -> None:
        path = Path(str(getattr(params, "save_path", "")))
        if path.is_file():
            return
        url = getattr(params, "file_url", "?")
        raise OcrUnavailable(f"rapidocr wanted to download {url}; the OCR engine only uses the models inside "
                             "its package")

    download_file.DownloadFile.run = classmethod(refuse)  # type: ignore[method-assign, assignment]


def _has_text(text: str) -> bool:
    return any(ch.isalnum() for ch in text)


def _cjk(ch: str) -> bool:
    return "\u2e80" <= ch <= "\u9fff" or "\uf900" <= ch <= "\ufaff" or "\uff00" <= ch <= "\uffef"


def _join(left: str, right: str) -> str:
    """Two boxes of one row: CJK text runs on without a space, anything else gets one."""
    if left and right and _cjk(left[-1]) and _cjk(right[0]):
        return left + right
    return f"{left} {right}"


def reading_order(lines: list[OcrLine]) -> list[OcrLine]:
    """Rows top to bottom (a box joins the row it overlaps by half its height), boxes within a row left to
    right, each row one line."""
    rows: list[list[OcrLine]] = []
    for line in sorted(lines, key=lambda ln: (ln.box[1], ln.box[0])):
        top, bottom = line.box[1], line.box[3]
        if rows:
            row = rows[-1]
            row_top = min(ln.box[1] for ln in row)
            row_bottom = max(ln.box[3] for ln in row)
            row_height = min(ln.box[3] - ln.box[1] for ln in row)
            overlap = min(bottom, row_bottom) - max(top, row_top)
            if overlap >= 0.5 * max(min(bottom - top, row_height), 1.0):
                row.append(line)
                continue
        rows.append([line])
    merged: list[OcrLine] = []
    for row in rows:
        row.sort(key=lambda ln: ln.box[0])
        text = row[0].text
        for line in row[1:]:
            text = _join(text, line.text)
        weight = sum(max(len(ln.text), 1) for ln in row)
        confidence = sum(ln.confidence * max(len(ln.text), 1) for ln in row) / weight
        box = (min(ln.box[0] for ln in row), min(ln.box[1] for ln in row),
               max(ln.box[2] for ln in row), max(ln.box[3] for ln in row))
        merged.append(OcrLine(text=text, confidence=round(confidence, 4), box=box))
    return merged


class RapidOcrEngine:
    """``OcrEngine`` on rapidocr; built once per worker process by ``load_engine("rapidocr")``."""

    name = "rapidocr"

    def __init__(self, *, min_confidence: float = MIN_CONFIDENCE, threads: int = 1) -> None:
        _quiet()
        try:
            import cv2
            import rapidocr
            from rapidocr import RapidOCR
        except ImportError:
            raise
        except Exception as exc:  # noqa: BLE001 - a broken onnxruntime/OpenCV install raises OSError …
            raise OcrUnavailable(f"rapidocr failed to load: {type(exc).__name__}: {exc}") from exc
        _quiet()
        _forbid_downloads()
        with contextlib.suppress(Exception):
            cv2.setNumThreads(threads)
        models = Path(rapidocr.__file__).resolve().parent / "models"
        det = _pick(models, _DET_MODELS, "det")
        rec = _pick(models, _REC_MODELS, "rec")
        self.min_confidence = min_confidence
        self.models = (det.name, rec.name)
        self._lock = threading.Lock()
        try:
            self._ocr = RapidOCR(params={
                "Global.log_level": "error",
                "Global.model_root_dir": str(models),
                "Global.use_cls": False,
                "Global.text_score": 0.0,  # filtered here, with the row context
                "Global.max_side_len": MAX_SIDE,
                "Global.min_side_len": 30,
                "Det.model_path": str(det),
                "Det.limit_type": "max",
                "Det.limit_side_len": DET_MIN_SIDE,
                "Rec.model_path": str(rec),
                "Rec.rec_batch_num": REC_BATCH,
                "EngineConfig.onnxruntime.intra_op_num_threads": threads,
                "EngineConfig.onnxruntime.inter_op_num_threads": 1,
                "EngineConfig.onnxruntime.enable_cpu_mem_arena": False,
            })
            _quiet()
            # Load both models now: a broken install fails here (OcrUnavailable), not mid-document.
            for loader in ("_load_det_model", "_load_rec_model"):
                getattr(self._ocr, loader, lambda: None)()
        except OcrUnavailable:
            raise
        except Exception as exc:  # noqa: BLE001
            raise OcrUnavailable(f"rapidocr failed to load its models: {type(exc).__name__}: {exc}") from exc

    def recognize(self, image: bytes) -> OcrResult:
        return self.recognize_image(decode(open_image(image, what="image for OCR"), what="image for OCR"))

    def recognize_image(self, image: Image.Image) -> OcrResult:
        """OCR of decoded pixels (a parser that already holds the image skips a re-encode); boxes are in
        ``image``'s pixels."""
        prepared, scale = _prepare(image)
        lines: list[OcrLine] = []
        for top, bottom, keep_from, keep_to in _strips(prepared.width, prepared.height):
            strip = prepared if (top, bottom) == (0, prepared.height) else \
                prepared.crop((0, top, prepared.width, bottom))
            for line in self._run(strip):
                centre = top + (line.box[1] + line.box[3]) / 2
                if keep_from <= centre < keep_to:
                    x0, y0, x1, y1 = line.box
                    lines.append(line.model_copy(update={"box": (
                        x0 / scale, (y0 + top) / scale, x1 / scale, (y1 + top) / scale)}))
        return OcrResult(lines=reading_order(lines))

    def _run(self, image: Image.Image) -> list[OcrLine]:
        import numpy as np

        pixels = np.asarray(image)
        if pixels.ndim == 3:
            pixels = np.ascontiguousarray(pixels[:, :, ::-1])  # RGB → BGR, as OpenCV (and rapidocr) expect
        try:
            with self._lock:
                detector = getattr(self._ocr, "text_det", None)
                if detector is not None and hasattr(detector, "limit_side_len"):
                    detector.limit_side_len = _det_side(image.width, image.height)
                output = self._ocr(pixels)
        except Exception as exc:
            if "bad_alloc" in str(exc) or isinstance(exc, MemoryError):
                raise MemoryError(f"OCR ran out of memory on a {image.width} × {image.height} image") from exc
            raise
        boxes = getattr(output, "boxes", None)
        texts = getattr(output, "txts", None)
        scores = getattr(output, "scores", None)
        if boxes is None or texts is None or scores is None:
            return []
        lines: list[OcrLine] = []
        for points, text, score in zip(boxes, texts, scores, strict=False):
            text = str(text).strip()
            confidence = float(score)
            if not text or confidence < self.min_confidence:
                continue
            if not _has_text(text) and confidence < 0.8:
                continue
            xs = [float(p[0]) for p in points]
            ys = [float(p[1]) for p in points]
            lines.append(OcrLine(text=text, confidence=confidence, box=(min(xs), min(ys), max(xs), max(ys))))
        return lines


def _prepare(image: Image.Image) -> tuple[Image.Image, float]:
    """The image the recogniser sees and its scale from ``image``: at most ``MAX_SIDE`` across (a tall
    image's height is not bounded here: it is read in strips)."""
    width, height = image.size
    tall = height > STRIP_RATIO * width
    longest = width if tall else max(width, height)
    if longest > MAX_SIDE:
        scale = MAX_SIDE / longest
        small = shrink(image, max_side=max(round(max(width, height) * scale), 1))
        return small, small.width / width
    return image, 1.0


def _det_side(width: int, height: int) -> int:
    """The longer side detection runs at: the image (as rapidocr's own bound leaves it) scaled to
    ``DET_PIXELS``, never below ``DET_MIN_SIDE``, never above its own size."""
    scale = min(1.0, MAX_SIDE / max(width, height, 1))
    w, h = width * scale, height * scale
    longest = max(w, h)
    if w * h > DET_PIXELS:
        longest *= (DET_PIXELS / (w * h)) ** 0.5
    return int(max(DET_MIN_SIDE, min(longest, max(w, h))))


def _strips(width: int, height: int) -> list[tuple[int, int, int, int]]:
    """(top, bottom, keep_from, keep_to) per strip: strips of 1.5 widths overlapping by a tenth (at least 96
    px, more than half of any text line), each keeping the lines whose centre lies in its own share."""
    if height <= STRIP_RATIO * width:
        return [(0, height, 0, height)]
    length = round(1.5 * width)
    overlap = max(96, length // 10)
    step = length - overlap
    strips = []
    start = 0
    while True:
        end = min(start + length, height)
        last = end >= height
        keep_from = 0 if start == 0 else start + overlap // 2
        keep_to = height if last else start + step + overlap // 2
        strips.append((start, end, keep_from, keep_to))
        if last:
            return strips
        start += step
