"""Parse throughput per format (issue 15): each ``bench_<format>() -> dict`` builds a realistic file with a
library (ebooklib, xlwt, python-pptx, the email package, tests/fakes/cfb.py …) or by hand, parses it with
``parse_bytes`` in this process (no worker pool, OCR off unless said), and returns its figures. Run all, or
some:

    python benchmarks/parse_formats.py [format …]

Prints one JSON line: format → figures. Figures depend on the machine and its load: read them as orders of
magnitude, not as limits. ``benchmarks/parse.py`` runs them as its ``formats`` section.
"""

from __future__ import annotations

import base64
import io
import json
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from knora.adapters.parsers.registry import parse_bytes
from knora.ports.parser import ParseOptions


def _rate(parse: Callable[[], object], size: int, seconds: float = 3.0) -> dict[str, float]:
    """Parses repeatedly for about ``seconds``; files/s and MB/s of input."""
    parse()  # warm-up: imports, first-use caches
    runs, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        parse()
        runs += 1
    elapsed = time.perf_counter() - start
    return {"files_per_s": round(runs / elapsed, 1), "mb_per_s": round(runs * size / elapsed / 1e6, 2),
            "ms_per_file": round(1000 * elapsed / runs, 1), "input_kb": round(size / 1024, 1)}


# --- e-mail (.eml, .msg) ----------------------------------------------------------------------------------


def _mail_attachments() -> list[tuple[str, bytes, str]]:
    from tests.adapters.parsers.test_eml import png
    from tests.adapters.parsers.test_parsers import make_docx, make_pdf

    pages = [f"Page {n}: revenue and costs for the quarter, line {n}." for n in range(1, 4)]
    csv = "".join(f"row{i},{i * 3},{i * 7}\n" for i in range(200)).encode()
    return [("report.pdf", make_pdf(pages), "application/pdf"),
            ("guide.docx", make_docx(),
             "application/vnd.openxmlformats-officedocument.wordprocessingml.document"),
            ("budget.csv", b"name,a,b\n" + csv, "text/csv"),
            ("photo.png", png("", (640, 480)), "image/png")]


_BODY = "Hello team,\n\n" + "The quarterly numbers are attached; see the report for details.\n" * 20


def bench_eml() -> dict[str, object]:
    """A typical mail (text body + HTML alternative, PDF, DOCX, CSV, PNG attachments), a mail with 500
    small attachments (100 parsed, the rest named in ``skipped``), and one nested 10 deep."""
    from email.message import EmailMessage

    from knora.adapters.parsers.registry import parse_bytes
    from knora.ports.parser import ParseOptions

    opts = ParseOptions(ocr=False)
    m = EmailMessage()
    m["From"], m["To"], m["Subject"] = "ann@example.com", "team@example.com", "Quarterly numbers"
    m.set_content(_BODY)
    m.add_alternative("<p>" + _BODY.replace("\n", "<br>") + "</p>", subtype="html")
    for name, data, mime in _mail_attachments():
        main, sub = mime.split("/")
        m.add_attachment(data, maintype=main, subtype=sub, filename=name)
    typical = m.as_bytes()
    many = EmailMessage()
    many["From"], many["Subject"] = "bot@example.com", "500 attachments"
    many.set_content("see attached")
    for i in range(500):
        many.add_attachment(f"note {i}\n".encode(), maintype="text", subtype="plain", filename=f"n{i}.txt")
    many_bytes = many.as_bytes()
    inner = EmailMessage()
    inner["From"], inner["Subject"] = "a@example.com", "level 0"
    inner.set_content("innermost")
    for level in range(1, 11):
        outer = EmailMessage()
        outer["From"], outer["Subject"] = "a@example.com", f"level {level}"
        outer.set_content(f"body {level}")
        outer.add_attachment(inner)
        inner = outer
    deep = inner.as_bytes()
    return {"typical": _rate(lambda: parse_bytes(typical, "m.eml", options=opts), len(typical)),
            "attachments_500": _rate(lambda: parse_bytes(many_bytes, "m.eml", options=opts), len(many_bytes),
                                     2.0),
            "nested_10": _rate(lambda: parse_bytes(deep, "m.eml", options=opts), len(deep), 1.0)}


def bench_msg() -> dict[str, object]:
    """The same typical mail as an Outlook item (written by ``tests/fakes/cfb.py``), and 100 attachments."""
    from knora.adapters.parsers.registry import parse_bytes
    from knora.ports.parser import ParseOptions
    from tests.fakes.cfb import MsgAttachment, MsgSpec, make_msg

    opts = ParseOptions(ocr=False)
    typical = make_msg(MsgSpec(subject="Quarterly numbers", body=_BODY, sender_name="Ann",
                               sender_email="ann@example.com", to="Team",
                               attachments=[MsgAttachment(n, d, mime=t) for n, d, t in _mail_attachments()]))
    many = make_msg(MsgSpec(subject="100 attachments", body="see attached",
                            attachments=[MsgAttachment(f"n{i}.txt", f"note {i}\n".encode())
                                         for i in range(100)]))
    return {"typical": _rate(lambda: parse_bytes(typical, "m.msg", options=opts), len(typical)),
            "attachments_100": _rate(lambda: parse_bytes(many, "m.msg", options=opts), len(many), 2.0)}


# --- end of e-mail ------------------------------------------------------------------------------------------


def _measure(data: bytes, file_name: str, *, repeat: int = 3) -> dict[str, Any]:
    """Best of ``repeat`` parses (the least disturbed by other work on the machine)."""
    best = float("inf")
    chars = 0
    for _ in range(repeat):
        start = time.perf_counter()
        doc = parse_bytes(data, file_name)
        best = min(best, time.perf_counter() - start)
        chars = len(doc.text)
    return {"file": file_name, "input_mb": round(len(data) / 1e6, 2), "seconds": round(best, 3),
            "input_mb_per_s": round(len(data) / 1e6 / best, 2), "chars_per_s": int(chars / best),
            "chars": chars}


_WORDS = ["knowledge", "base", "retrieval", "answer", "citation", "document", "chunk", "parser", "index",
          "query", "tenant", "model", "embedding", "vector", "keyword", "rerank", "stream", "session", "page",
          "table", "image"]
_ZH = "知识库检索回答引用文档分块解析索引查询模型向量关键词重排会话页面表格图片"


def _sentence(rnd: random.Random, zh: bool = False) -> str:
    if zh:
        return "".join(rnd.choice(_ZH) for _ in range(rnd.randint(15, 40))) + "。"
    return " ".join(rnd.choice(_WORDS) for _ in range(rnd.randint(8, 20))).capitalize() + "."


# ---- branch office: epub, rtf, xls, code ------------------------------------------------------------------

def bench_epub(chapters: int = 200, paragraphs: int = 30) -> dict[str, Any]:
    """A 200-chapter e-book written by ebooklib (about 1 MB of XHTML), English and Chinese chapters."""
    from ebooklib import epub

    rnd = random.Random(15)
    book = epub.EpubBook()
    book.set_identifier("bench")
    book.set_title("Benchmark Book")
    book.set_language("en")
    items = []
    for n in range(chapters):
        c = epub.EpubHtml(title=f"Chapter {n + 1}", file_name=f"c{n}.xhtml")
        body = "".join(f"<p>{_sentence(rnd, zh=n % 4 == 3)}</p>" for _ in range(paragraphs))
        c.content = f"<h1>Chapter {n + 1}</h1>{body}"
        book.add_item(c)
        items.append(c)
    book.toc = tuple(items)
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    book.spine = ["nav", *items]
    buf = io.BytesIO()
    epub.write_epub(buf, book)
    out = _measure(buf.getvalue(), "bench.epub")
    out["chapters"] = chapters
    out["chapters_per_s"] = int(chapters / out["seconds"])
    return out


def _rtf_text(rnd: random.Random, paragraphs: int) -> bytes:
    parts = ["{\\rtf1\\ansi\\ansicpg936\\deff0{\\fonttbl{\\f0\\fnil\\fcharset134 SimSun;}"
             "{\\f1\\fswiss\\fcharset0 Arial;}}\\uc1\\pard "]
    for i in range(paragraphs):
        if i % 3 == 2:
            parts.append("\\f0 " + "".join(f"\\'{b:02x}" for b in _sentence(rnd, zh=True).encode("gbk")))
        else:
            parts.append("\\f1 " + _sentence(rnd))
        parts.append("\\par\n")
    parts.append("}")
    return "".join(parts).encode("ascii")


def bench_rtf(paragraphs: int = 20_000) -> dict[str, Any]:
    """A text-heavy RTF (~2 MB: English paragraphs and GBK-escaped Chinese), one with 40 MB of pictures, and
    the hostile inputs (deep nesting, a 40 MB \\bin blob, 100k field groups), each timed."""
    rnd = random.Random(15)
    text = _rtf_text(rnd, paragraphs)
    out = _measure(text, "bench.rtf")
    picture = b"{\\pict\\pngblip " + b"0123456789abcdef" * 250_000 + b"}"  # 4 MB hex picture
    pictures = text[:-1] + picture * 10 + b"}"
    out["with_40mb_of_pictures"] = _measure(pictures, "pictures.rtf", repeat=1)
    hostile = {
        "deep_nesting_2m": b"{\\rtf1 " + b"{" * 2_000_000 + b"x" + b"}" * 2_000_000 + b"}",
        "bin_blob_40mb": b"{\\rtf1 a{\\pict\\bin40000000 " + b"{}\\{" * 10_000_000 + b"} b}",
        "fields_100k": b"{\\rtf1\\ansi " + b"{\\field{\\*\\fldinst{ x}}}" * 100_000 + b" done}",
    }
    for name, data in hostile.items():
        start = time.perf_counter()
        try:
            parse_bytes(data, f"{name}.rtf")
            ended = "parsed"
        except Exception as exc:
            ended = f"{type(exc).__name__}: {str(exc)[:60]}"
        out[f"hostile_{name}"] = {"input_mb": round(len(data) / 1e6, 1),
                                  "seconds": round(time.perf_counter() - start, 3), "ended": ended}
    return out


def bench_xls(rows: int = 20_000, cols: int = 8) -> dict[str, Any]:
    """A 160,000-cell workbook written by xlwt: numbers, text and dates on two sheets."""
    from datetime import date, timedelta

    import xlwt

    rnd = random.Random(15)
    wb = xlwt.Workbook(encoding="utf-8")
    day = xlwt.easyxf(num_format_str="YYYY-MM-DD")
    for s in range(2):
        ws = wb.add_sheet(f"Sheet {s + 1}")
        for c in range(cols):
            ws.write(0, c, f"column {c}")
        for r in range(1, rows // 2):
            ws.write(r, 0, rnd.choice(_WORDS))
            ws.write(r, 1, date(2020, 1, 1) + timedelta(days=r % 1500), day)
            for c in range(2, cols):
                ws.write(r, c, round(rnd.random() * 1000, 2))
    buf = io.BytesIO()
    wb.save(buf)
    out = _measure(buf.getvalue(), "bench.xls")
    out["cells"] = rows * cols
    out["cells_per_s"] = int(rows * cols / out["seconds"])
    return out


def bench_code(files: int = 200) -> dict[str, Any]:
    """200 Python files of ~250 lines each (about 2 MB), and the chunking of one of them."""
    from knora.domain.knowledge import ChunkingConfig
    from knora.services.ingest.chunker import split_document

    rnd = random.Random(15)
    sources = []
    for f in range(files):
        funcs = []
        for k in range(25):
            body = "\n".join(f"    value_{i} = compute_{rnd.choice(_WORDS)}(value_{max(i - 1, 0)}, {i})"
                             for i in range(8))
            funcs.append(f"def handler_{f}_{k}(request):\n    \"\"\"{_sentence(rnd)}\"\"\"\n{body}\n"
                         "    return value_7\n")
        sources.append(("import os\nimport sys\n\n\n" + "\n\n".join(funcs)).encode())
    start = time.perf_counter()
    chars = sum(len(parse_bytes(src, f"m{i}.py").text) for i, src in enumerate(sources))
    seconds = time.perf_counter() - start
    total = sum(len(s) for s in sources)
    doc = parse_bytes(sources[0], "m0.py")
    drafts = split_document(doc.text, ChunkingConfig())
    return {"files": files, "input_mb": round(total / 1e6, 2), "seconds": round(seconds, 3),
            "input_mb_per_s": round(total / 1e6 / seconds, 2), "files_per_s": int(files / seconds),
            "chars_per_s": int(chars / seconds),
            "chunks_of_one_file": len(drafts),
            "largest_chunk": max(len(d.content) for d in drafts)}

# ---- end of branch office ---------------------------------------------------------------------------------


# ---- branch slides: pptx, OpenDocument, embedded images in md/html --------------------------------------

_SLIDE_WORDS = ("revenue", "margin", "region", "forecast", "customer", "pipeline", "quarter", "growth",
                "cost")


def _slide_sentence(i: int, n: int = 14) -> str:
    words = " ".join(_SLIDE_WORDS[(i * 7 + k * (i % 5 + 1)) % len(_SLIDE_WORDS)] for k in range(n))
    return f"{words.capitalize()} {i * 37 % 1009}."


def _slide_png(width: int, height: int, seed: int) -> bytes:
    from PIL import Image, ImageDraw

    img = Image.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(img)
    for k in range(12):
        draw.rectangle((k * width // 12, height - (seed * 13 + k * 29) % height, (k + 1) * width // 12 - 4,
                        height), fill=(40 + k * 15, 80, 160))
    buf = io.BytesIO()
    img.save(buf, "PNG")
    return buf.getvalue()


def _slide_measure(fmt: str, data: bytes, file_name: str, seconds: float) -> dict[str, object]:
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
    picture = _slide_png(640, 360, 1)
    for n in range(slides):
        slide = prs.slides.add_slide(prs.slide_layouts[1])
        slide.shapes.title.text = f"Slide {n + 1}: {_SLIDE_WORDS[n % len(_SLIDE_WORDS)]} review"
        slide.placeholders[1].text = "\n".join(_slide_sentence(n * 5 + k) for k in range(5))
        if n % 3 == 0:
            table = slide.shapes.add_table(6, 4, Inches(1), Inches(4), Inches(8), Inches(2)).table
            for r in range(6):
                for c in range(4):
                    table.cell(r, c).text = f"{_SLIDE_WORDS[(r + c) % len(_SLIDE_WORDS)]} {r * c}"
        if n % 5 == 0:
            slide.shapes.add_picture(io.BytesIO(picture), Inches(6), Inches(1), Inches(3))
        slide.notes_slide.notes_text_frame.text = " ".join(_slide_sentence(n + k) for k in range(4))
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
        doc.text.addElement(P(text=" ".join(_slide_sentence(i + k) for k in range(3))))
        if i % 100 == 50:
            table = Table(name=f"T{i}")
            for r in range(10):
                row = TableRow()
                for c in range(5):
                    cell = TableCell()
                    cell.addElement(P(text=f"{_SLIDE_WORDS[(r + c) % len(_SLIDE_WORDS)]} {r * c}"))
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
                value = f"{_SLIDE_WORDS[(r + c) % len(_SLIDE_WORDS)]}" if c < 3 else str(r * c + s)
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
    """The tests' presentation (titles, bodies, a footer, notes, a picture), ``slides`` long."""
    from tests.adapters.parsers.test_odf import make_odp

    return make_odp(slides)


def markdown_with_images(paragraphs: int = 300, images: int = 20) -> bytes:
    parts = ["# Field report"]
    for i in range(paragraphs):
        parts.append(" ".join(_slide_sentence(i + k) for k in range(3)))
        if i % (paragraphs // images) == 0:
            b64 = base64.b64encode(_slide_png(480, 270, i)).decode()
            parts.append(f"![chart {i}](data:image/png;base64,{b64})")
    return "\n\n".join(parts).encode()


def html_with_images(paragraphs: int = 300, images: int = 20) -> bytes:
    parts = ["<html><head><title>Field report</title></head><body><main><h1>Field report</h1>"]
    for i in range(paragraphs):
        parts.append(f"<p>{' '.join(_slide_sentence(i + k) for k in range(3))}</p>")
        if i % (paragraphs // images) == 0:
            b64 = base64.b64encode(_slide_png(480, 270, i)).decode()
            parts.append(f'<p><img alt="chart {i}" src="data:image/png;base64,{b64}"></p>')
    parts.append("</main></body></html>")
    return "".join(parts).encode()


def bench_pptx(seconds: float = 2.0) -> dict[str, object]:
    return _slide_measure("pptx", pptx_deck(), "deck.pptx", seconds)


def bench_odt(seconds: float = 2.0) -> dict[str, object]:
    return _slide_measure("odt", odt_text(), "text.odt", seconds)


def bench_ods(seconds: float = 2.0) -> dict[str, object]:
    return _slide_measure("ods", ods_sheets(), "sheets.ods", seconds)


def bench_odp(seconds: float = 2.0) -> dict[str, object]:
    return _slide_measure("odp", odp_deck(), "deck.odp", seconds)


def bench_md_images(seconds: float = 2.0) -> dict[str, object]:
    return _slide_measure("md+data-uri images", markdown_with_images(), "report.md", seconds)


def bench_html_images(seconds: float = 2.0) -> dict[str, object]:
    return _slide_measure("html+data-uri images", html_with_images(), "report.html", seconds)

# ---- end of branch slides ---------------------------------------------------------------------------------


def _benches() -> dict[str, Callable[[], dict[str, Any]]]:
    return {name.removeprefix("bench_"): fn for name, fn in sorted(globals().items())
            if name.startswith("bench_") and callable(fn)}




def main(argv: list[str]) -> None:
    benches = _benches()
    for name in argv:
        if name not in benches:
            raise SystemExit(f"unknown format {name!r}; known: {', '.join(benches)}")
    print(json.dumps({name: benches[name]() for name in argv or list(benches)}, ensure_ascii=False))


if __name__ == "__main__":
    main(sys.argv[1:])
