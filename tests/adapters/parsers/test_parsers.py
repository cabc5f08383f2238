"""Every parser on real small files the tests create (PDF by reportlab, DOCX by python-docx, XLSX by
openpyxl…), plus corrupt, empty, unsupported and zip-bomb inputs, which must all end in a readable
ParseError."""

from __future__ import annotations

import io
import json
import os
import zipfile

import pytest

from knora.adapters.parsers.registry import ParserRegistry, get_parser, parse_bytes, supported_extensions
from knora.ports.parser import ParseError, Parser

pytestmark = pytest.mark.unit


def make_pdf(pages: list[str], title: str | None = "Quarterly Report") -> bytes:
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    buf = io.BytesIO()
    c = canvas.Canvas(buf, pagesize=A4, invariant=True)
    if title:
        c.setTitle(title)
    for text in pages:
        y = 800
        for line in text.split("\n"):
            c.drawString(72, y, line)
            y -= 16
        c.showPage()
    c.save()
    return buf.getvalue()


def make_docx(core_title: str = "") -> bytes:
    import docx

    d = docx.Document()
    if core_title:
        d.core_properties.title = core_title
    d.add_heading("Installation Guide", level=1)
    d.add_paragraph("Knora answers questions over your documents.")
    d.add_heading("Requirements", level=2)
    d.add_paragraph("Python 3.11 or newer", style="List Bullet")
    table = d.add_table(rows=2, cols=2)
    table.cell(0, 0).text, table.cell(0, 1).text = "setting", "default"
    table.cell(1, 0).text, table.cell(1, 1).text = "chunk_size", "512"
    d.add_paragraph("The end.")
    buf = io.BytesIO()
    d.save(buf)
    return buf.getvalue()


def make_xlsx() -> bytes:
    import openpyxl

    wb = openpyxl.Workbook()
    ws = wb.active
    assert ws is not None
    ws.title = "Sales"
    ws.append(["region", "quarter", "revenue"])
    ws.append(["north", "Q1", 1200])
    ws.append(["south", "Q1", 980.5])
    other = wb.create_sheet("Staff")
    other.append(["name", "team"])
    other.append(["Li Lei", "研发"])
    wb.create_sheet("Empty")
    buf = io.BytesIO()
    wb.save(buf)
    return buf.getvalue()


def test_registry_covers_every_format_and_parsers_implement_the_port() -> None:
    assert {"txt", "md", "html", "pdf", "docx", "csv", "xlsx", "json"} <= supported_extensions()
    for ext in supported_extensions():
        parser = get_parser(ext)
        assert isinstance(parser, Parser)
        assert ext in parser.extensions
    assert get_parser(".PDF").extensions == get_parser("pdf").extensions


def test_unsupported_and_empty_files_are_refused_with_a_reason() -> None:
    with pytest.raises(ParseError, match=r"unsupported file type \.exe; supported: .*\.pdf"):
        parse_bytes(b"MZ...", "setup.exe")
    with pytest.raises(ParseError, match="unsupported file type"):
        get_parser("")
    with pytest.raises(ParseError, match="empty"):
        parse_bytes(b"", "notes.txt")
    with pytest.raises(ParseError, match="empty"):
        parse_bytes(b"  \n\t", "notes.md")


@pytest.mark.parametrize(("data", "expected"), [
    ("héllo wörld\r\nsecond line\rthird".encode(), "héllo wörld\nsecond line\nthird"),
    ("\ufeffwith a BOM".encode(), "with a BOM"),
    ("中文文档，编码是 GB18030。".encode("gb18030"), "中文文档，编码是 GB18030。"),
    ("café crème".encode("latin-1"), "café crème"),
    ("utf-16 text".encode("utf-16"), "utf-16 text"),
])
def test_text_decoding_and_line_endings(data: bytes, expected: str) -> None:
    doc = parse_bytes(data, "dir/My Notes.txt")
    assert doc.text == expected
    assert doc.title == "My Notes"


def test_markdown_title_from_first_heading_or_front_matter() -> None:
    md = "```\n# not this\n```\n\nIntro.\n\n# Real Title\n\n## Section\n\n| a | b |\n|---|---|\n| 1 | 2 |\n"
    doc = parse_bytes(md.encode(), "readme.md")
    assert doc.title == "Real Title"
    assert "| 1 | 2 |" in doc.text
    fm = parse_bytes(b"---\ntitle: 'From Front Matter'\ntags: [x]\n---\n# Heading\n\nBody", "a.markdown")
    assert fm.title == "From Front Matter"
    assert fm.text.startswith("# Heading")
    assert parse_bytes(b"no headings here", "plain.md").title == "plain"


def test_html_strips_boilerplate_and_keeps_structure() -> None:
    html = """<!doctype html><html><head><title> Knora &amp; Friends </title><style>p{color:red}</style>
    <script>var tracking = 1;</script></head><body>
    <header><a href="/">Site logo</a></header><nav><ul><li>Home</li><li>About</li></ul></nav>
    <div role="navigation">Breadcrumbs</div>
    <main><h1>Main heading</h1><p>First   paragraph
    text.</p><h2>Details</h2><ul><li>one</li><li>two</li></ul>
    <table><tr><th>k</th><th>v</th></tr><tr><td>size</td><td>512</td></tr></table>
    <pre>code  line\n  indented</pre><p><img src="/img/a.png" alt="diagram"> caption</p></main>
    <aside>Related links</aside><footer>Copyright 2026</footer></body></html>"""
    doc = parse_bytes(html.encode(), "page.html")
    assert doc.title == "Knora & Friends"
    for gone in ("Site logo", "Home", "Breadcrumbs", "Related links", "Copyright", "tracking", "color:red"):
        assert gone not in doc.text
    assert doc.text.startswith("# Main heading\n\nFirst paragraph text.\n\n## Details\n\n- one\n- two")
    assert "| size | 512 |" in doc.text
    assert "```\ncode  line\n  indented\n```" in doc.text
    assert "![diagram](/img/a.png)" in doc.text
    untitled = parse_bytes(b"<html><body><article><header><h1>Post title</h1></header><p>Body.</p>"
                           b"</article></body></html>", "post.htm")
    assert untitled.title == "Post title"
    assert "Body." in untitled.text


def test_pdf_text_and_title_from_metadata() -> None:
    data = make_pdf(["Knora ingestion manual\nChunks are 512 characters.", "Second page about retrieval."])
    doc = parse_bytes(data, "manual.pdf")
    assert doc.title == "Quarterly Report"
    assert "Chunks are 512 characters." in doc.text
    assert "Second page about retrieval." in doc.text
    assert doc.metadata["pages"] == "2"
    assert parse_bytes(make_pdf(["Untitled body"], title=None), "scan 01.pdf").title == "scan 01"


def test_pdf_without_text_layer_fails_with_reason() -> None:
    with pytest.raises(ParseError, match="no extractable text"):
        parse_bytes(make_pdf(["", ""]), "blank.pdf")


@pytest.mark.parametrize("damage", ["truncated", "garbage", "header-only"])
def test_corrupt_pdf_fails_with_reason(damage: str) -> None:
    good = make_pdf(["Some text that will be lost."])
    data = {"truncated": good[: len(good) // 3], "garbage": os.urandom(2000),
            "header-only": b"%PDF-1.7\n" + os.urandom(500)}[damage]
    with pytest.raises(ParseError):
        parse_bytes(data, "broken.pdf")


def test_docx_headings_become_markdown_and_title_comes_from_the_document() -> None:
    doc = parse_bytes(make_docx(), "guide.docx")
    assert doc.title == "Installation Guide"
    assert doc.text.startswith("# Installation Guide\n\nKnora answers questions over your documents.\n\n"
                               "## Requirements\n\n- Python 3.11 or newer")
    assert "| setting | default |\n| --- | --- |\n| chunk_size | 512 |" in doc.text
    assert doc.text.index("chunk_size") < doc.text.index("The end.")  # body order kept
    assert parse_bytes(make_docx(core_title="Core Title"), "g.docx").title == "Core Title"


def test_corrupt_docx_fails_with_reason() -> None:
    with pytest.raises(ParseError, match="not a valid .docx"):
        parse_bytes(os.urandom(4096), "random.docx")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("hello.txt", "a zip, but not a Word document")
    with pytest.raises(ParseError, match="damaged or not a Word document"):
        parse_bytes(buf.getvalue(), "fake.docx")


def test_xlsx_sheets_become_tables_and_markdown() -> None:
    doc = parse_bytes(make_xlsx(), "report.xlsx")
    assert doc.title == "report"
    assert doc.tables == [[["region", "quarter", "revenue"], ["north", "Q1", "1200"], ["south", "Q1",
                                                                                       "980.5"]],
                          [["name", "team"], ["Li Lei", "研发"]]]
    assert ("## Sales\n\n| region | quarter | revenue |\n| --- | --- | --- |\n"
            "| north | Q1 | 1200 |") in doc.text
    assert "## Staff" in doc.text
    assert "Empty" not in doc.text
    assert doc.metadata["sheets"] == "Sales, Staff"
    with pytest.raises(ParseError):
        parse_bytes(make_docx(), "not-a-workbook.xlsx")


def _bomb(entry_bytes: int) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("[Content_Types].xml", "<Types/>")
        z.writestr("word/document.xml", b"\0" * entry_bytes)
    return buf.getvalue()


@pytest.mark.parametrize("ext", ["docx", "xlsx"])
def test_zip_bombs_are_refused_before_opening(ext: str) -> None:
    small = _bomb(2 * 1024 * 1024)
    with pytest.raises(ParseError, match="would expand to 2097"):
        parse_bytes(small, f"bomb.{ext}", max_expanded_bytes=1024 * 1024)
    with pytest.raises(ParseError, match="zip bomb"):
        ParserRegistry().parse(_bomb(40 * 1024 * 1024), f"bomb.{ext}")  # ~1000x ratio, under 512 MB


def test_csv_rows_tables_and_delimiter_sniffing() -> None:
    doc = parse_bytes("name;city\r\nAda;London\r\n\"Lin, Jun\";上海\r\n".encode(), "people.csv")
    assert doc.tables == [[["name", "city"], ["Ada", "London"], ["Lin, Jun", "上海"]]]
    assert doc.text == "| name | city |\n| --- | --- |\n| Ada | London |\n| Lin, Jun | 上海 |"
    tsv = parse_bytes(b"a\tb\n1\t2|3\n", "x.tsv")
    assert tsv.tables == [[["a", "b"], ["1", "2|3"]]]
    assert "2\\|3" in tsv.text


def test_json_is_flattened_to_key_paths() -> None:
    data = {"title": "Config", "server": {"port": 8080, "tls": False}, "tags": ["a", "b"], "none": None}
    doc = parse_bytes(json.dumps(data).encode(), "config.json")
    assert doc.title == "Config"
    assert doc.text.split("\n") == ["title: Config", "server.port: 8080", "server.tls: false", "tags[0]: a",
                                    "tags[1]: b", "none: null"]
    lines = parse_bytes(b'{"name": "first", "v": 1}\n\n{"v": 2}\n', "rows.jsonl")
    assert lines.title == "first"
    assert lines.text == "[0].name: first\n[0].v: 1\n[1].v: 2"
    with pytest.raises(ParseError, match="invalid JSON"):
        parse_bytes(b'{"unterminated": ', "bad.json")


@pytest.mark.parametrize(("name", "data", "title"), [
    ("socat.html", b"<html><head><title><strong>socat</strong> &amp; friends</title></head>"
                   b"<body><p>Relay data.</p></body></html>", "socat & friends"),
    ("vector.html", b"<html><head><title>Vector<T> reference</title></head><body><p>x y</p></body></html>",
     "Vector<T> reference"),
    ("guide.md", b"# **Install** the [CLI](https://example.org) with `pip`\n\nText.",
     "Install the CLI with pip"),
    ("names.md", b"# my_config_file options\n\nText.", "my_config_file options"),
])
def test_titles_are_shown_without_markup(name: str, data: bytes, title: str) -> None:
    assert parse_bytes(data, name).title == title


def test_a_very_long_title_is_bounded() -> None:
    doc = parse_bytes(("# " + "word " * 200 + "\n\nText.").encode(), "long.md")
    assert len(doc.title) <= 300
    assert doc.title.endswith("…")


@pytest.mark.parametrize(("text", "title"), [
    ("gsettings-desktop-schemas\n=========================\n\nSchemas for the desktop.",
     "gsettings-desktop-schemas"),
    ("base-passwd for Debian\n----------------------\n\nThe master copies.", "base-passwd for Debian"),
    ("What is GNU Nettle? A quote from the manual:\n\n  Nettle is a library.", "README"),
    ("Long opening line of prose\n===\n\nText.", "README"),  # an underline much shorter is no title
    ("----------\n----------\nrules only", "README"),
])
def test_plain_text_titles_from_an_underlined_first_line(text: str, title: str) -> None:
    assert parse_bytes(text.encode(), "README.txt").title == title
