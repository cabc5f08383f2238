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
- ``pdf``: text PDFs of ``--pdf-pages`` pages (default 100 and 500; reportlab: 40 lines a page, a running
  header and footer, a ruled table every 10th page), each parsed in a fresh process: the growth of that
  process's peak RSS over its RSS just before the parse (goal: flat in the page count — pages are loaded,
  read and closed one at a time; what grows is the text kept) and pages/s; and the milliseconds of a
  text-only page against a ruled-table page (pdfium + pdfplumber).
- ``pdf_scanned``: scanned PDF pages (tests/fakes/scans.py) through the PDF parser and the real OCR engine:
  pages/s (render at 200 dpi + OCR), and a 10-page scan under a 5 s time budget (a partial parse naming the
  pages left).

    python benchmarks/parse.py [--only ocr] [--ocr-pages 3] [--ocr-noise 1.0] [--ocr-jpeg 0]
    python benchmarks/parse.py --only pdf --only pdf_scanned [--pdf-pages 100 --pdf-pages 500]
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


def text_pdf(pages: int, table_every: int = 10) -> bytes:
    """A report of ``pages`` pages: 40 lines each, a running header and footer, a ruled table every
    ``table_every``th page (0 = none)."""
    from reportlab.lib import colors
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas
    from reportlab.platypus import Table, TableStyle

    width, height = A4
    buf = io.BytesIO()
    c = canvas.Canvas(buf, pagesize=A4, invariant=True)
    for number in range(1, pages + 1):
        c.setFont("Helvetica", 9)
        c.drawString(72, height - 40, "Benchmark Corp — Internal")
        c.drawString(width / 2, 30, f"Page {number} of {pages}")
        c.setFont("Helvetica", 10)
        lines = 40
        if table_every and number % table_every == 0:
            rows = [["Item", "Count", "Share"]] + [[f"row {i}", str(i * number), f"{i}%"] for i in range(8)]
            table = Table(rows)
            table.setStyle(TableStyle([("GRID", (0, 0), (-1, -1), 0.5, colors.black)]))
            table.wrapOn(c, width, height)
            table.drawOn(c, 72, 120)
            lines = 25
        for i in range(lines):
            c.drawString(72, height - 90 - 14 * i,
                         f"Page {number}, line {i}: the quick brown fox reads the manual {i * number}.")
        c.showPage()
    c.save()
    return buf.getvalue()


# Run in a fresh process by section_pdf: its peak RSS is the parse's alone.
_PDF_CHILD = """
import json, sys, time
import psutil
import pypdfium2  # loaded before the baseline, like a warm worker
from knora.adapters.parsers.registry import parse_bytes
from knora.ports.parser import ParseOptions
data = open(sys.argv[1], "rb").read()
base = psutil.Process().memory_info().rss / 1024  # now, not the high-water mark of the imports
start = time.perf_counter()
doc = parse_bytes(data, "bench.pdf", options=ParseOptions(ocr=False))
seconds = time.perf_counter() - start
# VmHWM, not ru_maxrss: Linux keeps ru_maxrss across exec, so a child of a big parent (this script after its
# OCR section holds ~480 MB) would report the parent's peak; VmHWM belongs to this process image alone
peak = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(json.dumps({"base_mb": base / 1024, "peak_mb": peak / 1024, "seconds": seconds,
                  "chars": len(doc.text)}))
"""


def section_pdf(args: argparse.Namespace) -> dict[str, Any]:
    import subprocess
    import tempfile

    from knora.adapters.parsers.registry import parse_bytes
    from knora.ports.parser import ParseOptions

    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for pages in args.pdf_pages or [100, 500]:
            path = Path(tmp) / f"{pages}.pdf"
            path.write_bytes(text_pdf(pages))
            run = subprocess.run([sys.executable, "-c", _PDF_CHILD, str(path)], check=True,
                                 capture_output=True, text=True, cwd=ROOT)
            got = json.loads(run.stdout.strip().splitlines()[-1])
            out[f"{pages}_pages"] = {"file_mb": round(path.stat().st_size / 1e6, 2),
                                     "peak_rss_growth_mb": round(got["peak_mb"] - got["base_mb"], 1),
                                     "peak_rss_mb": round(got["peak_mb"], 1),
                                     "pages_per_s": round(pages / got["seconds"], 1),
                                     "text_chars": got["chars"]}
    page_ms = {}
    for name, every in (("text_page", 0), ("table_page", 1)):
        data = text_pdf(20, table_every=every)
        parse_bytes(data, "warm.pdf", options=ParseOptions(ocr=False))
        start = time.perf_counter()
        parse_bytes(data, "bench.pdf", options=ParseOptions(ocr=False))
        page_ms[name] = round((time.perf_counter() - start) / 20 * 1000, 1)
    out["page_ms"] = page_ms
    return out


def section_pdf_scanned(args: argparse.Namespace) -> dict[str, Any]:
    from knora.adapters.ocr.registry import load_engine
    from knora.adapters.parsers.registry import parse_bytes
    from knora.ports.parser import ParseOptions
    from tests.fakes.scans import scanned_pdf

    load_engine("rapidocr")  # the model load is a once-per-worker cost, not a page's
    pages = [sample_lines("en", 12, seed=i) for i in range(3)]
    start = time.perf_counter()
    doc = parse_bytes(scanned_pdf(pages), "scan.pdf")
    seconds = time.perf_counter() - start
    big = scanned_pdf([sample_lines("en", 12, seed=i) for i in range(10)])
    start = time.perf_counter()
    partial = parse_bytes(big, "big-scan.pdf", options=ParseOptions(time_budget_seconds=5))
    return {"ocr_pages_per_s": round(len(pages) / seconds, 3), "ocr_pages": doc.metadata.get("ocr_pages", ""),
            "budget_5s": {"seconds": round(time.perf_counter() - start, 1),
                          "pages_read": partial.metadata.get("ocr_pages", ""), "skipped": partial.skipped}}


def section_formats(args: argparse.Namespace) -> dict[str, Any]:
    """Parse throughput of every other format (benchmarks/parse_formats.py), OCR off."""
    import parse_formats

    wanted = args.formats.split(",") if args.formats else []
    benches = parse_formats._benches()
    return {name: benches[name]() for name in wanted or benches}


SECTIONS: dict[str, Section] = {
    "ocr": section_ocr,
    "pdf": section_pdf,
    "pdf_scanned": section_pdf_scanned,
    "formats": section_formats,
}


def add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--formats", default="", help="comma-separated formats of parse_formats.py (formats)")
    parser.add_argument("--ocr-pages", type=int, default=3, help="scanned pages per language (ocr)")
    parser.add_argument("--ocr-noise", type=float, default=1.0, help="scanner noise, 0 = clean (ocr)")
    parser.add_argument("--ocr-jpeg", type=int, default=0, help="JPEG quality the pages go through; 0 = none")
    parser.add_argument("--pdf-pages", type=int, action="append", help="PDF sizes (pdf); default 100 and 500")


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
