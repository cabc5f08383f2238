"""Parsing figures for issue 15, one function per section; each returns a dict and the script prints one JSON
line holding every section that ran.

- ``pdf``: a text PDF of 100 and of 500 pages (reportlab: 40 lines a page, a running header and footer, a
  ruled table every 10th page), each parsed in a fresh process: peak RSS of that process minus its RSS before
  the parse (goal: flat in the page count: pages are loaded, read and closed one at a time) and pages/s; and
  the cost of a page that pdfplumber is asked about (a ruled table) against a text-only page.
- ``pdf_scanned``: scanned PDF pages read by the real OCR engine (pages/s), and a 10-page scan under a 5 s
  time budget (a partial parse naming the pages left).

    python benchmarks/parse.py [--only pdf] [--only pdf_scanned] [--pages 100 --pages 500]
"""

from __future__ import annotations

import argparse
import io
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def text_pdf(pages: int, table_every: int = 10) -> bytes:
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
            _, h = table.wrapOn(c, width, height)
            table.drawOn(c, 72, 120)
            lines = 25
        for i in range(lines):
            c.drawString(72, height - 90 - 14 * i,
                         f"Page {number}, line {i}: the quick brown fox reads the manual {i * number}.")
        c.showPage()
    c.save()
    return buf.getvalue()


def _child(path: str) -> None:
    """Parses ``path`` in this fresh process; prints its RSS before and at peak (MB) and the seconds."""
    import resource

    import pypdfium2  # noqa: F401 - loaded before the baseline, like a warm worker

    from knora.adapters.parsers.registry import parse_bytes
    from knora.ports.parser import ParseOptions

    data = Path(path).read_bytes()
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    doc = parse_bytes(data, "bench.pdf", options=ParseOptions(ocr=False))
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"base_mb": base / 1024, "peak_mb": peak / 1024, "seconds": seconds,
                      "pages": len(doc.pages), "chars": len(doc.text)}))


def pdf(page_counts: list[int]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for pages in page_counts:
            path = Path(tmp) / f"{pages}.pdf"
            path.write_bytes(text_pdf(pages))
            run = subprocess.run([sys.executable, __file__, "--child", str(path)], check=True,
                                 capture_output=True, text=True, cwd=ROOT)
            got = json.loads(run.stdout.strip().splitlines()[-1])
            out[f"{pages}_pages"] = {
                "file_mb": round(path.stat().st_size / 1e6, 2),
                "peak_rss_growth_mb": round(got["peak_mb"] - got["base_mb"], 1),
                "peak_rss_mb": round(got["peak_mb"], 1),
                "pages_per_s": round(pages / got["seconds"], 1),
                "text_chars": got["chars"],
            }
    out["page_ms"] = _page_costs()
    return out


def _page_costs() -> dict[str, float]:
    """Milliseconds a text-only page and a ruled-table page (pdfium + pdfplumber) cost, over 20 pages each."""
    from knora.adapters.parsers.registry import parse_bytes
    from knora.ports.parser import ParseOptions

    costs = {}
    for name, every in (("text_page", 0), ("table_page", 1)):
        data = text_pdf(20, table_every=every)
        parse_bytes(data, "warm.pdf", options=ParseOptions(ocr=False))
        start = time.perf_counter()
        parse_bytes(data, "bench.pdf", options=ParseOptions(ocr=False))
        costs[name] = round((time.perf_counter() - start) / 20 * 1000, 1)
    return costs


def pdf_scanned() -> dict[str, Any]:
    """Scanned PDF pages (``tests/fakes/scans.py``) through the real OCR engine: pages/s (render at 200 dpi +
    OCR), and a 10-page scan under a 5 s time budget: how many pages were read, how long the parse took, and
    what it named as skipped."""
    from knora.adapters.ocr.registry import load_engine
    from knora.adapters.parsers.registry import parse_bytes
    from knora.ports.parser import ParseOptions
    from tests.fakes import scans

    load_engine("rapidocr")  # the model load is a once-per-worker cost, not a page's
    pages = [scans.sample_lines("en", 12, seed=i) for i in range(3)]
    data = scans.scanned_pdf(pages)
    start = time.perf_counter()
    doc = parse_bytes(data, "scan.pdf")
    seconds = time.perf_counter() - start
    big = scans.scanned_pdf([scans.sample_lines("en", 12, seed=i) for i in range(10)])
    start = time.perf_counter()
    partial = parse_bytes(big, "big-scan.pdf", options=ParseOptions(time_budget_seconds=5))
    return {"ocr_pages_per_s": round(len(pages) / seconds, 2),
            "ocr_pages": doc.metadata.get("ocr_pages", ""),
            "budget_5s": {"seconds": round(time.perf_counter() - start, 1),
                          "pages_read": partial.metadata.get("ocr_pages", ""), "skipped": partial.skipped}}


SECTIONS: dict[str, Callable[[argparse.Namespace], dict[str, Any]]] = {
    "pdf": lambda args: pdf(args.pages or [100, 500]),
    "pdf_scanned": lambda _args: pdf_scanned(),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--only", action="append", choices=sorted(SECTIONS), help="run only these sections")
    parser.add_argument("--pages", action="append", type=int, help="PDF sizes for the pdf section")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child)
        return
    result = {name: run(args) for name, run in SECTIONS.items() if not args.only or name in args.only}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
