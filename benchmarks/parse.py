"""Parsing figures (issue 15): OCR character accuracy and speed, more sections to come (each format's parse
throughput, peak memory of a 500-page PDF).

Sections are functions ``section_NAME(args) -> dict`` registered in ``SECTIONS``; each runs on files it
generates (no data set needed) and returns its figures, printed under its name in one JSON line.
Add a section by writing the function, adding it to ``SECTIONS`` and, if it needs options, to ``add_options``.

- ``formats``: each format's parse throughput (``benchmarks/parse_formats.py``; ``--formats pptx,eml``).
- ``ocr``: A4 pages "scanned" at 200 dpi (tests/fakes/scans.py: 12 pt text, sensor noise, dust, slight blur),
  ``--ocr-pages`` per language, English and Chinese, through ``RapidOcrEngine`` as the image parser calls it
  (one onnxruntime thread). Accuracy is 1 - edit distance / longer length, whitespace ignored (goal >= 0.95
  each); ``pages_per_s`` is pages / wall seconds of recognition with the engine warm, ``pages_per_cpu_s`` the
  same per CPU second of this process (steadier on a shared machine). ``load_avg`` is the 1-minute load
  average before and after.

  ``--ocr-noise`` and ``--ocr-jpeg QUALITY`` make the pages harder.

    python benchmarks/parse.py [--only ocr] [--ocr-pages 3] [--ocr-noise 1.0] [--ocr-jpeg 0]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from PIL import Image  # noqa: E402

from tests.fakes.scans import char_accuracy, render_scan, sample_lines  # noqa: E402

Section = Callable[[argparse.Namespace], dict[str, Any]]


def _load() -> float:
    return round(os.getloadavg()[0], 2)


def _jpeg(image: Image.Image, quality: int) -> bytes:
    out = io.BytesIO()
    image.save(out, "JPEG", quality=quality)
    return out.getvalue()


def section_ocr(args: argparse.Namespace) -> dict[str, Any]:
    from knora.adapters.ocr.rapidocr import RapidOcrEngine

    started = time.perf_counter()
    engine = RapidOcrEngine()
    load_seconds = time.perf_counter() - started
    engine.recognize_image(render_scan(["warm up"], height_in=None))  # first run allocates; not a page's cost
    out: dict[str, Any] = {"engine": engine.name, "models": list(engine.models), "dpi": 200,
                           "noise": args.ocr_noise, "jpeg_quality": args.ocr_jpeg or None,
                           "load_seconds": round(load_seconds, 2)}
    wall = cpu = 0.0
    pages = 0
    for lang in ("en", "zh"):
        scores = []
        for page in range(args.ocr_pages):
            lines = sample_lines(lang, 24, seed=100 + page)  # type: ignore[arg-type]
            image = render_scan(lines, seed=100 + page, noise=args.ocr_noise)
            if args.ocr_jpeg:
                image = Image.open(io.BytesIO(_jpeg(image, args.ocr_jpeg)))
            t0, c0 = time.perf_counter(), time.process_time()
            text = engine.recognize_image(image).text
            wall += time.perf_counter() - t0
            cpu += time.process_time() - c0
            pages += 1
            scores.append(char_accuracy(text, "\n".join(lines)))
        out[f"accuracy_{lang}"] = round(sum(scores) / len(scores), 4)
        out[f"accuracy_{lang}_min"] = round(min(scores), 4)
    out["pages"] = pages
    out["pages_per_s"] = round(pages / wall, 3)
    out["pages_per_cpu_s"] = round(pages / cpu, 3)
    out["goal_met"] = out["accuracy_en"] >= 0.95 and out["accuracy_zh"] >= 0.95
    return out


def section_formats(args: argparse.Namespace) -> dict[str, Any]:
    """Parse throughput of every other format (benchmarks/parse_formats.py), OCR off."""
    import parse_formats

    wanted = args.formats.split(",") if args.formats else []
    benches = parse_formats._benches()
    return {name: benches[name]() for name in wanted or benches}


SECTIONS: dict[str, Section] = {
    "ocr": section_ocr,
    "formats": section_formats,
}


def add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--formats", default="", help="comma-separated formats of parse_formats.py (formats)")
    parser.add_argument("--ocr-pages", type=int, default=3, help="scanned pages per language (ocr)")
    parser.add_argument("--ocr-noise", type=float, default=1.0, help="scanner noise, 0 = clean (ocr)")
    parser.add_argument("--ocr-jpeg", type=int, default=0, help="JPEG quality the pages go through; 0 = none")


def main(argv: list[str]) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", action="append", choices=sorted(SECTIONS),
                        help="run only this section (repeatable); default: all")
    add_options(parser)
    args = parser.parse_args(argv)
    out: dict[str, Any] = {"benchmark": "parse", "date": datetime.now(UTC).isoformat(timespec="seconds"),
                           "cpus": os.cpu_count(), "load_avg_before": _load()}
    for name in args.only or list(SECTIONS):
        out[name] = SECTIONS[name](args)
    out["load_avg_after"] = _load()
    return out


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1:]), ensure_ascii=False))
