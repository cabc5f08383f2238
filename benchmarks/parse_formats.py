"""Parse throughput of the slide, OpenDocument and embedded-image formats (issue 15), in process.

Each ``bench_<format>()`` builds one realistic document with the format's own library (python-pptx, odfpy,
Pillow for pictures), parses it through ``parse_bytes`` with OCR off (this measures the parser, not the OCR
engine; ``benchmarks/parse.py`` measures OCR), repeatedly for about ``seconds``, and returns one dict:
format, input size, pages, characters out, best and median seconds per document, docs/s and MB/s (from the
median). For ``benchmarks/parse.py`` (its ``SECTIONS`` registry): ``section_formats(args)`` runs them all
(``--format-seconds`` from ``add_options``) and returns ``{format: figures}``. Alone:

    python benchmarks/parse_formats.py [--seconds 2]

Prints one JSON line per format.
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from knora.adapters.parsers.registry import parse_bytes
from knora.ports.parser import ParseOptions

_WORDS = ("revenue", "margin", "region", "forecast", "customer", "pipeline", "quarter", "growth", "cost")


def _sentence(i: int, n: int = 14) -> str:
    words = " ".join(_WORDS[(i * 7 + k * (i % 5 + 1)) % len(_WORDS)] for k in range(n))
    return f"{words.capitalize()} {i * 37 % 1009}."


def _png(width: int, height: int, seed: int) -> bytes:
    from PIL import Image, ImageDraw

    img = Image.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(img)
    for k in range(12):
        draw.rectangle((k * width // 12, height - (seed * 13 + k * 29) % height, (k + 1) * width // 12 - 4,
                        height), fill=(40 + k * 15, 80, 160))
    buf = io.BytesIO()
    img.save(buf, "PNG")
    return buf.getvalue()


def _measure(fmt: str, data: bytes, file_name: str, seconds: float) -> dict[str, object]:
    options = ParseOptions(ocr=False)
    times: list[float] = []
    doc = None
    deadline = time.perf_counter() + seconds
    while len(times) < 3 or (time.perf_counter() < deadline and len(times) < 200):
        t0 = time.perf_counter()
        doc = parse_bytes(data, file_name, options=options)
        times.append(time.perf_counter() - t0)
    assert doc is not None
    median = statistics.median(times)
    return {"format": fmt, "bytes": len(data), "pages": len(doc.pages), "images": len(doc.images),
            "chars": len(doc.text), "runs": len(times), "best_s": round(min(times), 4),
            "median_s": round(median, 4), "docs_per_s": round(1 / median, 2),
            "mb_per_s": round(len(data) / median / 1e6, 2),
            "kchars_per_s": round(len(doc.text) / median / 1e3)}


def pptx_deck(slides: int = 100) -> bytes:
    from pptx import Presentation
    from pptx.util import Inches

    prs = Presentation()
    picture = _png(640, 360, 1)
    for n in range(slides):
        slide = prs.slides.add_slide(prs.slide_layouts[1])
        slide.shapes.title.text = f"Slide {n + 1}: {_WORDS[n % len(_WORDS)]} review"
        slide.placeholders[1].text = "\n".join(_sentence(n * 5 + k) for k in range(5))
        if n % 3 == 0:
            table = slide.shapes.add_table(6, 4, Inches(1), Inches(4), Inches(8), Inches(2)).table
            for r in range(6):
                for c in range(4):
                    table.cell(r, c).text = f"{_WORDS[(r + c) % len(_WORDS)]} {r * c}"
        if n % 5 == 0:
            slide.shapes.add_picture(io.BytesIO(picture), Inches(6), Inches(1), Inches(3))
        slide.notes_slide.notes_text_frame.text = " ".join(_sentence(n + k) for k in range(4))
    buf = io.BytesIO()
    prs.save(buf)
    return buf.getvalue()


def odt_text(paragraphs: int = 600) -> bytes:
    from odf.opendocument import OpenDocumentText
    from odf.table import Table, TableCell, TableRow
    from odf.text import H, P

    doc = OpenDocumentText()
    for i in range(paragraphs):
        if i % 20 == 0:
            doc.text.addElement(H(outlinelevel=1 + (i // 20) % 2, text=f"Section {i // 20 + 1}"))
        doc.text.addElement(P(text=" ".join(_sentence(i + k) for k in range(3))))
        if i % 100 == 50:
            table = Table(name=f"T{i}")
            for r in range(10):
                row = TableRow()
                for c in range(5):
                    cell = TableCell()
                    cell.addElement(P(text=f"{_WORDS[(r + c) % len(_WORDS)]} {r * c}"))
                    row.addElement(cell)
                table.addElement(row)
            doc.text.addElement(table)
    buf = io.BytesIO()
    doc.write(buf)
    return buf.getvalue()


def ods_sheets(sheets: int = 3, rows: int = 2_000) -> bytes:
    from odf.opendocument import OpenDocumentSpreadsheet
    from odf.table import Table, TableCell, TableRow
    from odf.text import P

    doc = OpenDocumentSpreadsheet()
    for s in range(sheets):
        table = Table(name=f"Sheet{s + 1}")
        for r in range(rows):
            row = TableRow()
            for c in range(8):
                value = f"{_WORDS[(r + c) % len(_WORDS)]}" if c < 3 else str(r * c + s)
                cell = TableCell(valuetype="string") if c < 3 else TableCell(valuetype="float", value=value)
                cell.addElement(P(text=value))
                row.addElement(cell)
            row.addElement(TableCell(numbercolumnsrepeated=1000))
            table.addElement(row)
        doc.spreadsheet.addElement(table)
    buf = io.BytesIO()
    doc.write(buf)
    return buf.getvalue()


def odp_deck(slides: int = 100) -> bytes:
    from odf.draw import Frame, Page, TextBox
    from odf.opendocument import OpenDocumentPresentation
    from odf.presentation import Notes
    from odf.style import MasterPage, PageLayout, PageLayoutProperties
    from odf.text import P

    doc = OpenDocumentPresentation()
    layout = PageLayout(name="Layout")
    layout.addElement(PageLayoutProperties(pagewidth="28cm", pageheight="21cm"))
    doc.automaticstyles.addElement(layout)
    master = MasterPage(name="Master", pagelayoutname=layout)
    doc.masterstyles.addElement(master)
    ns = "urn:oasis:names:tc:opendocument:xmlns:presentation:1.0"

    def box(parent: object, lines: list[str], y: str, cls: str) -> None:
        frame = Frame(width="24cm", height="3cm", x="2cm", y=y)
        frame.setAttrNS(ns, "class", cls)
        tb = TextBox()
        for line in lines:
            tb.addElement(P(text=line))
        frame.addElement(tb)
        parent.addElement(frame)  # type: ignore[attr-defined]

    for n in range(slides):
        page = Page(masterpagename=master, name=f"page{n + 1}")
        box(page, [f"Slide {n + 1}"], "1cm", "title")
        box(page, [_sentence(n * 5 + k) for k in range(5)], "5cm", "outline")
        notes = Notes()
        box(notes, [" ".join(_sentence(n + k) for k in range(4))], "12cm", "notes")
        page.addElement(notes)
        doc.presentation.addElement(page)
    buf = io.BytesIO()
    doc.write(buf)
    return buf.getvalue()


def markdown_with_images(paragraphs: int = 300, images: int = 20) -> bytes:
    parts = ["# Field report"]
    for i in range(paragraphs):
        parts.append(" ".join(_sentence(i + k) for k in range(3)))
        if i % (paragraphs // images) == 0:
            b64 = base64.b64encode(_png(480, 270, i)).decode()
            parts.append(f"![chart {i}](data:image/png;base64,{b64})")
    return "\n\n".join(parts).encode()


def html_with_images(paragraphs: int = 300, images: int = 20) -> bytes:
    parts = ["<html><head><title>Field report</title></head><body><main><h1>Field report</h1>"]
    for i in range(paragraphs):
        parts.append(f"<p>{' '.join(_sentence(i + k) for k in range(3))}</p>")
        if i % (paragraphs // images) == 0:
            b64 = base64.b64encode(_png(480, 270, i)).decode()
            parts.append(f'<p><img alt="chart {i}" src="data:image/png;base64,{b64}"></p>')
    parts.append("</main></body></html>")
    return "".join(parts).encode()


def bench_pptx(seconds: float = 2.0) -> dict[str, object]:
    return _measure("pptx", pptx_deck(), "deck.pptx", seconds)


def bench_odt(seconds: float = 2.0) -> dict[str, object]:
    return _measure("odt", odt_text(), "text.odt", seconds)


def bench_ods(seconds: float = 2.0) -> dict[str, object]:
    return _measure("ods", ods_sheets(), "sheets.ods", seconds)


def bench_odp(seconds: float = 2.0) -> dict[str, object]:
    return _measure("odp", odp_deck(), "deck.odp", seconds)


def bench_md_images(seconds: float = 2.0) -> dict[str, object]:
    return _measure("md+data-uri images", markdown_with_images(), "report.md", seconds)


def bench_html_images(seconds: float = 2.0) -> dict[str, object]:
    return _measure("html+data-uri images", html_with_images(), "report.html", seconds)


ALL: dict[str, Callable[[float], dict[str, object]]] = {
    "pptx": bench_pptx, "odt": bench_odt, "ods": bench_ods, "odp": bench_odp,
    "md_images": bench_md_images, "html_images": bench_html_images,
}


def add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format-seconds", type=float, default=2.0,
                        help="seconds spent parsing each format (section formats)")


def section_formats(args: argparse.Namespace) -> dict[str, object]:
    """The ``formats`` section of ``benchmarks/parse.py``: every format's figures by name."""
    seconds = float(getattr(args, "format_seconds", 2.0))
    return {name: bench(seconds) for name, bench in ALL.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--seconds", type=float, default=2.0, help="time spent parsing each format")
    parser.add_argument("formats", nargs="*", choices=[*ALL, []], help="default: all")
    args = parser.parse_args()
    for name in args.formats or ALL:
        print(json.dumps(ALL[name](args.seconds)), flush=True)


if __name__ == "__main__":
    main()
