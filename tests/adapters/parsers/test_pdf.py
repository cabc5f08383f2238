"""The PDF parser on real PDFs that reportlab (and Pillow) write in the test: pages and page numbers, running
headers and footers, ruled tables, images, scanned pages (OCR by a small fake engine, and by the real one when
it is installed), the OCR time budget, encrypted files and PDF bombs."""

from __future__ import annotations

import io
import time
import zlib
from collections.abc import Callable, Sequence
from types import ModuleType

import pytest
from PIL import Image
from reportlab.lib import colors
from reportlab.lib.pagesizes import A4
from reportlab.lib.utils import ImageReader
from reportlab.pdfgen import canvas
from reportlab.platypus import Table, TableStyle

from knora.adapters.parsers import pdf_layout as layout
from knora.adapters.parsers.pdf import PdfParser
from knora.adapters.parsers.registry import parse_bytes
from knora.domain.document import chunk_location
from knora.ports.ocr import OcrEngine, OcrLine, OcrResult, OcrUnavailable
from knora.ports.parser import ParseContext, ParsedDocument, ParseError, ParseOptions

WIDTH, HEIGHT = A4
Draw = Callable[[canvas.Canvas, int], None]


class FakeOcr:
    """Reads every image as one line naming the call ("scanned words 1", …); ``delay`` makes each call that
    slow (for the time budget)."""

    name = "fake"

    def __init__(self, delay: float = 0.0) -> None:
        self.calls = 0
        self.delay = delay

    def recognize(self, image: bytes) -> OcrResult:
        Image.open(io.BytesIO(image)).verify()  # the parser hands over a real encoded image
        self.calls += 1
        time.sleep(self.delay)
        return OcrResult(lines=[OcrLine(text=f"scanned words {self.calls}", confidence=0.9,
                                        box=(100.0, 300.0, 900.0, 340.0))])


def parse(data: bytes, *, ocr: OcrEngine | None = None, **options: object) -> ParsedDocument:
    opts = ParseOptions(ocr=ocr is not None, **options)  # type: ignore[arg-type]
    ctx = ParseContext(max_expanded_bytes=1 << 30, options=opts,
                       ocr_loader=(lambda: ocr) if ocr is not None else None)  # type: ignore[return-value]
    return PdfParser(ctx).parse(data, "doc.pdf")


def make_pdf(pages: int, draw: Draw, **canvas_args: object) -> bytes:
    buf = io.BytesIO()
    c = canvas.Canvas(buf, pagesize=A4, invariant=True, **canvas_args)  # type: ignore[arg-type]
    for number in range(1, pages + 1):
        draw(c, number)
        c.showPage()
    c.save()
    return buf.getvalue()


def body(c: canvas.Canvas, number: int, lines: Sequence[str] = ()) -> None:
    c.setFont("Helvetica", 12)
    y = HEIGHT - 120
    for line in lines or [f"Body of page {number} talks about topic{number}.",
                          "A second sentence that every page has in its body."]:
        c.drawString(72, y, line)
        y -= 16


def with_running_lines(c: canvas.Canvas, number: int, total: int) -> None:
    c.setFont("Helvetica", 9)
    c.drawString(72, 30, f"Page {number} of {total}")  # drawn first: the stream starts with the footer
    c.drawString(72, HEIGHT - 40, "ACME Corp — Confidential")
    body(c, number)


def picture(width: int, height: int, seed: int = 0) -> Image.Image:
    image = Image.new("RGB", (width, height))
    image.putdata([((x * 7 + seed) % 256, (y * 5) % 256, (x + y) % 256) for y in range(height)
                   for x in range(width)])
    return image


def scanned_page(c: canvas.Canvas, number: int) -> None:
    c.drawImage(ImageReader(picture(400, 560, seed=number)), 0, 0, WIDTH, HEIGHT)


class TestPages:
    def test_every_page_is_a_span_and_chunks_name_their_page(self) -> None:
        doc = parse_bytes(make_pdf(4, body), "four.pdf")
        assert [p.number for p in doc.pages] == [1, 2, 3, 4]
        for span in doc.pages:
            assert f"topic{span.number}." in doc.text[span.start:span.end]
        at = doc.text.index("topic3")
        assert chunk_location(doc.pages, at, at + 10) == {"page": 3, "page_kind": "page"}
        assert doc.metadata["pages"] == "4"
        assert doc.skipped == []

    def test_title_from_metadata_else_the_file_name(self) -> None:
        def titled(c: canvas.Canvas, n: int) -> None:
            c.setTitle("Microsoft Word - Field Guide")
            body(c, n)
        assert parse_bytes(make_pdf(1, titled), "x.pdf").title == "Field Guide"
        assert parse_bytes(make_pdf(1, body), "scan 01.pdf").title == "scan 01"

    def test_two_columns_are_read_column_by_column(self) -> None:
        def draw(c: canvas.Canvas, n: int) -> None:
            c.setFont("Helvetica", 11)
            for x, column in ((72, "left"), (320, "right")):
                for i in range(3):
                    c.drawString(x, 700 - 14 * i, f"{column} column line {i}")
        text = parse(make_pdf(1, draw)).text
        assert text.index("left column line 2") < text.index("right column line 0")

    def test_a_footer_drawn_first_is_still_read_last(self) -> None:
        doc = parse(make_pdf(2, lambda c, n: with_running_lines(c, n, 2)))
        page_one = doc.text[doc.pages[0].start:doc.pages[0].end]
        assert page_one.index("ACME Corp") < page_one.index("Body of page 1") < page_one.index("Page 1 of 2")


class TestRunningHeadersAndFooters:
    def test_repeated_header_and_numbered_footer_are_dropped(self) -> None:
        doc = parse(make_pdf(5, lambda c, n: with_running_lines(c, n, 5)))
        assert "Confidential" not in doc.text
        assert "of 5" not in doc.text
        assert all(f"topic{n}." in doc.text for n in range(1, 6))
        assert "every page has in its body" in doc.text  # repeated body text is not a header

    @pytest.mark.parametrize("footer", ["- {n} -", "{n}", "Page {n}", "第 {n} 页"])
    def test_page_number_styles_are_one_footer(self, footer: str) -> None:
        def draw(c: canvas.Canvas, n: int) -> None:
            c.setFont("Helvetica", 9)
            c.drawString(WIDTH / 2, 30, footer.format(n=n + 10))
            body(c, n)
        doc = parse(make_pdf(4, draw))
        assert str(13) not in doc.text

    def test_a_running_head_that_changes_with_the_chapter(self) -> None:
        def draw(c: canvas.Canvas, n: int) -> None:
            c.setFont("Helvetica", 9)
            c.drawString(72, HEIGHT - 40, f"Chapter {1 + (n - 1) // 3}: {'Methods' if n <= 3 else 'Results'}")
            body(c, n)
        doc = parse(make_pdf(6, draw))
        assert "Chapter" not in doc.text
        assert all(f"topic{n}." in doc.text for n in range(1, 7))

    def test_paragraphs_are_split_at_wider_gaps(self) -> None:
        doc = parse(make_pdf(1, lambda c, n: body(c, n, ["First paragraph line one,", "and line two.", "",
                                                          "Second paragraph."])))
        assert doc.text == "First paragraph line one,\nand line two.\n\nSecond paragraph."

    def test_a_two_page_document_keeps_every_line(self) -> None:
        doc = parse(make_pdf(2, lambda c, n: with_running_lines(c, n, 2)))
        assert doc.text.count("ACME Corp — Confidential") == 2
        assert "Page 2 of 2" in doc.text

    def test_edge_keys(self) -> None:
        assert layout.edge_key("Page 3 of 10") == layout.edge_key("page 4 of 10")
        assert layout.edge_key("- 7 -") == layout.edge_key("12") == layout.edge_key("xiv") == "#"
        assert layout.edge_key("Chapter 3: Methods") != "#"


class TestTables:
    def test_a_ruled_table_is_markdown_where_it_was_and_not_word_soup(self) -> None:
        def draw(c: canvas.Canvas, n: int) -> None:
            body(c, n, ["Before the table comes this sentence."])
            table = Table([["Region", "Revenue", "Growth"], ["North", "1200", "5%"], ["South", "900", "-2%"]])
            table.setStyle(TableStyle([("GRID", (0, 0), (-1, -1), 0.5, colors.black)]))
            _, h = table.wrapOn(c, WIDTH, HEIGHT)
            table.drawOn(c, 72, HEIGHT - 160 - h)
            c.drawString(72, HEIGHT - 200 - h, "After the table, a closing sentence.")
        doc = parse(make_pdf(1, draw))
        expected = ("| Region | Revenue | Growth |\n| --- | --- | --- |\n| North | 1200 | 5% |\n"
                    "| South | 900 | -2% |")
        assert expected in doc.text
        assert doc.text.index("Before the table") < doc.text.index("| Region") < doc.text.index("After the")
        assert "North 1200" not in doc.text
        assert doc.text.count("1200") == 1


class TestImages:
    def test_images_are_kept_on_their_page_and_tiny_ones_left_out(self) -> None:
        def draw(c: canvas.Canvas, n: int) -> None:
            body(c, n)
            if n == 2:
                c.drawImage(ImageReader(picture(240, 160)), 72, 300, 240, 160)
                c.drawImage(ImageReader(picture(8, 8)), 400, 300, 8, 8)  # a bullet
        doc = parse(make_pdf(2, draw))
        assert len(doc.images) == 1
        image = doc.images[0]
        assert (image.page, image.width, image.height) == (2, 240, 160)
        assert Image.open(io.BytesIO(image.data)).size == (240, 160)
        assert doc.pages[1].start <= image.offset <= len(doc.text)
        assert doc.skipped == ["1 image left out: small (icons, rules)"]

    def test_a_large_image_is_kept_scaled_down(self) -> None:
        def draw(c: canvas.Canvas, n: int) -> None:
            body(c, n)
            c.drawImage(ImageReader(picture(2600, 200)), 72, 300, 450, 35)
        [image] = parse(make_pdf(1, draw)).images
        assert (image.width, image.height) == (2048, 158)
        assert Image.open(io.BytesIO(image.data)).size == (2048, 158)

    def test_an_image_shown_on_every_page_is_kept_once(self) -> None:
        logo = picture(120, 120)

        def draw(c: canvas.Canvas, n: int) -> None:
            body(c, n)
            c.drawImage(ImageReader(logo), 400, 400, 120, 120)
        assert len(parse(make_pdf(3, draw)).images) == 1

    def test_image_text_is_read_when_ocr_is_on(self) -> None:
        def draw(c: canvas.Canvas, n: int) -> None:
            body(c, n)
            c.drawImage(ImageReader(picture(300, 200)), 72, 300, 300, 200)
        ocr = FakeOcr()
        doc = parse(make_pdf(1, draw), ocr=ocr)
        assert doc.images[0].ocr_text == "scanned words 1"
        assert "scanned words 1" in doc.text[doc.pages[0].start:doc.pages[0].end]

    def test_the_image_count_and_bytes_are_capped_and_what_was_left_is_named(
            self, monkeypatch: pytest.MonkeyPatch) -> None:
        from knora.adapters.parsers import pdf_images

        def draw(c: canvas.Canvas, n: int) -> None:
            body(c, n)
            for i in range(3):
                c.drawImage(ImageReader(picture(100, 100, seed=10 * n + i)), 72 + 120 * i, 300, 100, 100)
        monkeypatch.setattr(pdf_images, "MAX_IMAGES", 4)
        doc = parse(make_pdf(2, draw))
        assert len(doc.images) == 4
        assert doc.skipped == ["2 images left out: more than 4 in the document"]
        monkeypatch.setattr(pdf_images, "MAX_TOTAL_BYTES", len(doc.images[0].data) * 2)
        capped = parse(make_pdf(2, draw))
        assert 1 <= len(capped.images) <= 2
        assert capped.skipped[0].endswith("left out: the document's images passed 0 MB")

    def test_an_image_claiming_400_megapixels_is_neither_decoded_nor_rendered(self) -> None:
        ocr = FakeOcr()
        data = bomb_pixels(20_000)
        assert len(data) < 1_000_000
        reason = r"p\. 1: no text layer, its images hold 400 Mpx, too many to render"
        with pytest.raises(ParseError, match=reason):
            parse(data, ocr=ocr)
        assert ocr.calls == 0

    def test_no_images_when_the_upload_says_so(self) -> None:
        def draw(c: canvas.Canvas, n: int) -> None:
            body(c, n)
            c.drawImage(ImageReader(picture(300, 200)), 72, 300, 300, 200)
        assert parse(make_pdf(1, draw), extract_images=False).images == []


class TestScannedPages:
    @staticmethod
    def mixed(c: canvas.Canvas, n: int) -> None:
        (scanned_page if n == 2 else body)(c, n)

    def test_a_scanned_page_is_read_by_ocr_on_its_own_page(self) -> None:
        ocr = FakeOcr()
        doc = parse(make_pdf(3, self.mixed), ocr=ocr)
        assert ocr.calls == 1
        page_two = next(p for p in doc.pages if p.number == 2)
        assert doc.text[page_two.start:page_two.end] == "scanned words 1"
        assert doc.images == []  # the page itself was read; its scan is not kept again as an image
        assert doc.skipped == []
        assert doc.metadata["ocr_pages"] == "2"

    def test_a_pillow_scan_is_a_scanned_page(self) -> None:
        scans = pytest.importorskip("tests.fakes.scans")
        try:
            data = scans.scanned_pdf([["A scanned contract, page one."], ["Page two of the contract."]])
        except scans.FontMissing as exc:
            pytest.skip(str(exc))
        ocr = FakeOcr()
        doc = parse(data, ocr=ocr)
        assert ocr.calls == 2
        assert [p.number for p in doc.pages] == [1, 2]

    def test_the_scan_under_a_searchable_text_layer_is_not_read_twice(self) -> None:
        def draw(c: canvas.Canvas, n: int) -> None:
            scanned_page(c, n)
            body(c, n)  # a scanner's invisible text layer, here visible
        ocr = FakeOcr()
        doc = parse(make_pdf(1, draw), ocr=ocr)
        assert ocr.calls == 0
        assert "topic1" in doc.text
        assert doc.images == []
        assert doc.skipped == ["1 image left out: page scans under a text layer"]

    def test_with_ocr_off_the_scanned_page_is_named_as_skipped(self) -> None:
        doc = parse(make_pdf(3, self.mixed))
        assert doc.skipped == ["p. 2: no text layer, OCR off"]
        assert [p.number for p in doc.pages] == [1, 3]

    def test_only_scanned_pages_and_ocr_off_is_a_clear_failure(self) -> None:
        reason = (r"no extractable text: 2 of its 2 pages have no usable text layer \(a scanned document\?\) "
                  r"and OCR off")
        with pytest.raises(ParseError, match=reason):
            parse(make_pdf(2, scanned_page))

    def test_ocr_that_cannot_load_is_named(self) -> None:
        def broken() -> OcrEngine:
            raise OcrUnavailable("the OCR engine 'fake' is not installed")
        ctx = ParseContext(max_expanded_bytes=1 << 30, options=ParseOptions(ocr=True), ocr_loader=broken)
        doc = PdfParser(ctx).parse(make_pdf(3, self.mixed), "doc.pdf")
        reason = "no text layer, OCR unavailable (the OCR engine 'fake' is not installed)"
        assert doc.skipped == [f"p. 2: {reason}"]

    def test_a_garbage_text_layer_is_read_by_ocr(self) -> None:
        from reportlab.pdfbase import pdfmetrics
        from reportlab.pdfbase.ttfonts import TTFont

        pdfmetrics.registerFont(TTFont("DejaVu", "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"))

        def draw(c: canvas.Canvas, n: int) -> None:
            c.setFont("DejaVu", 12)
            c.drawString(72, 700, " ".join("\ufffd" * n for n in (3, 4, 2, 4)))
        ocr = FakeOcr()
        doc = parse(make_pdf(1, draw), ocr=ocr)
        assert doc.text == "scanned words 1"
        assert "\ufffd" not in doc.text

    def test_text_quality(self) -> None:
        assert layout.quality("An ordinary sentence, with punctuation: 42.").usable
        assert layout.quality("中文的句子，也是可用的文本。").usable
        assert not layout.quality("").usable
        assert layout.quality("\ufffd\ufffd\ufffd \ufffd\ufffd").reason == "text layer is mostly garbage"
        assert not layout.quality("ÆÜÉÚ ÐÑÒ ÓÔÕ ÖØÙ").usable  # a CJK font without a Unicode map, as Latin-1
        assert not layout.quality("\x01\x02\x03\x04 \x05\x06").usable
        assert layout.quality("1 Introduction . . . . . . . . . . . . . . . . 1").usable  # dot leaders
        assert not layout.quality("■□▲△▼▽◆◇○● ■□▲△").usable  # symbols from a font without a Unicode map

    def test_ocr_stops_at_the_time_budget_and_names_the_pages_left(self) -> None:
        def draw(c: canvas.Canvas, n: int) -> None:
            (body if n == 1 else scanned_page)(c, n)
        ocr = FakeOcr(delay=0.6)
        doc = parse(make_pdf(5, draw), ocr=ocr, time_budget_seconds=0.5)
        assert "topic1" in doc.text
        assert ocr.calls <= 1  # whichever page started inside the budget; none after it was spent
        assert doc.skipped[-1].endswith("pp. 3–5: no text layer, OCR stopped: the time budget of 0.5 s was "
                                        "used") or doc.skipped == [
            "pp. 2–5: no text layer, OCR stopped: the time budget of 0.5 s was used"]


class TestBadInput:
    def test_password_protected(self) -> None:
        with pytest.raises(ParseError, match="password-protected"):
            parse(make_pdf(1, body, encrypt="secret"))

    def test_owner_password_only_still_parses(self) -> None:
        from reportlab.lib.pdfencrypt import StandardEncryption

        data = make_pdf(1, body, encrypt=StandardEncryption("", ownerPassword="owner", canPrint=0))
        assert "topic1" in parse(data).text

    @pytest.mark.parametrize("data", [b"PK\x03\x04 a zip", b"%PDF-1.7\n" + bytes(range(256)) * 4],
                             ids=["not-a-pdf", "garbage-after-header"])
    def test_not_a_pdf(self, data: bytes) -> None:
        with pytest.raises(ParseError, match="not a PDF|damaged or unreadable"):
            parse(data)

    def test_junk_before_the_header_is_tolerated(self) -> None:
        assert "topic1" in parse(b"\r\n%!junk from a mail gateway\n" + make_pdf(1, body)).text

    def test_truncated_keeps_what_can_be_read_or_fails_with_a_reason(self) -> None:
        good = make_pdf(6, body)
        for cut in (len(good) // 5, len(good) // 2, len(good) - 40):
            try:
                outcome = parse(good[:cut]).text
            except ParseError as exc:
                outcome = f"failed: {exc}"
            assert "topic1" in outcome or outcome.startswith("failed: the PDF "), outcome

    def test_a_page_of_a_quarter_million_characters_is_cut_and_named(self) -> None:
        shows = b"".join(b"BT /F1 2 Tf %d %d Td (x%07d abcdefghijklmnopqrstuvwxyz0123456789) Tj ET\n"
                         % (10 + (i % 4) * 150, 10 + (i // 4) % 770, i) for i in range(6000))
        doc = parse(_pdf(_catalog(b"5 0 R", 1) + [_FONT, _stream(shows), _PAGE]))
        assert len(doc.text) <= 200_000
        assert doc.skipped == ["p. 1: text cut at 200,000 characters"]

    def test_a_page_tree_claiming_a_million_pages(self) -> None:
        with pytest.raises(ParseError, match="has 1000000 pages; at most 5000"):
            parse(bomb_fanout(1000, 2))

    def test_a_page_tree_nested_100000_deep(self) -> None:
        with pytest.raises(ParseError, match=r"no extractable text: p\. 1: unreadable page"):
            parse(bomb_deep_tree(100_000))

    def test_deeply_nested_objects_and_forms(self) -> None:
        assert parse(bomb_nested_arrays(200_000)).text == "hello"
        doc = parse(bomb_nested_forms(3000))  # pdfium stops descending; the page is read as far as it goes
        assert "level 0" in doc.text
        assert len(doc.text) < 100_000


# PDF bombs, written object by object (reportlab will not write a broken page tree)

_FONT = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"
_PAGE = (b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> "
         b"/Contents 4 0 R >>")


def _stream(content: bytes, extra: bytes = b"") -> bytes:
    return f"<< /Length {len(content)} ".encode() + extra + b" >>\nstream\n" + content + b"\nendstream"


def _hello() -> bytes:
    return _stream(b"BT /F1 12 Tf 72 700 Td (hello) Tj ET")


def _pdf(objects: list[bytes]) -> bytes:
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, obj in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + obj + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{o:010d} 00000 n \n".encode() for o in offsets)
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


def _catalog(kids: bytes, count: int) -> list[bytes]:
    return [b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [" + kids + f"] /Count {count} >>".encode()]


def bomb_fanout(width: int, levels: int) -> bytes:
    """Each page-tree node lists the next one ``width`` times: ``width ** levels`` pages in a few KB."""
    objects = _catalog(b" ".join([b"6 0 R"] * width), width ** levels) + [_FONT, _hello(), _PAGE]
    for level in range(1, levels):
        kid = f"{6 + level if level < levels - 1 else 5} 0 R".encode()
        objects.append(b"<< /Type /Pages /Kids [" + b" ".join([kid] * width)
                       + f"] /Count {width ** (levels - level)} >>".encode())
    return _pdf(objects)


def bomb_deep_tree(depth: int) -> bytes:
    objects = _catalog(b"5 0 R", 1) + [_FONT, _hello()]
    objects += [f"<< /Type /Pages /Kids [{6 + i} 0 R] /Count 1 >>".encode() for i in range(depth)]
    objects.append(_PAGE)
    return _pdf(objects)


def bomb_nested_arrays(depth: int) -> bytes:
    page = _PAGE.replace(b"/Contents", b"/X " + b"[" * depth + b"]" * depth + b" /Contents")
    return _pdf(_catalog(b"5 0 R", 1) + [_FONT, _hello(), page])


def bomb_pixels(side: int) -> bytes:
    """A page-sized grey image of ``side`` x ``side`` pixels, zeros compressed to a few hundred KB."""
    deflate = zlib.compressobj(9)
    row = bytes(side)
    packed = b"".join(deflate.compress(row) for _ in range(side)) + deflate.flush()
    image = _stream(packed, f"/Type /XObject /Subtype /Image /Width {side} /Height {side} "
                    "/BitsPerComponent 8 /ColorSpace /DeviceGray /Filter /FlateDecode".encode())
    page = _PAGE.replace(b"/Font << /F1 3 0 R >>", b"/XObject << /Im0 6 0 R >>")
    return _pdf(_catalog(b"5 0 R", 1) + [_FONT, _stream(b"q 612 0 0 792 0 0 cm /Im0 Do Q"), page, image])


def bomb_nested_forms(depth: int) -> bytes:
    """Form XObjects each drawing the next one, ``depth`` deep."""
    page = _PAGE.replace(b">> >>", b">> /XObject << /X0 6 0 R >> >>")
    objects = _catalog(b"5 0 R", 1) + [_FONT, _stream(b"/X0 Do"), page]
    for i in range(depth):
        content = f"/X0 Do BT /F1 12 Tf 72 {700 - i % 600} Td (level {i}) Tj ET".encode()
        objects.append(_stream(content, b"/Type /XObject /Subtype /Form /BBox [0 0 612 792] /Resources << "
                               + f"/Font << /F1 3 0 R >> /XObject << /X0 {7 + i} 0 R >> >>".encode()))
    return _pdf(objects)



@pytest.fixture(scope="module")
def real_scans() -> ModuleType:
    """``tests.fakes.scans`` once the rapidocr engine loads here and the CJK font is installed."""
    from knora.adapters.ocr.registry import load_engine

    scans = pytest.importorskip("tests.fakes.scans")
    try:
        scans.font_path(cjk=True)
        load_engine("rapidocr")
    except (scans.FontMissing, OcrUnavailable) as exc:
        pytest.skip(str(exc))
    return scans


@pytest.mark.slow
class TestRealOcr:
    """The rapidocr engine (``knora.adapters.ocr.rapidocr``) on Pillow-rendered scans in a PDF, through
    ``parse_bytes`` with the default options: OCR on."""

    def test_english_and_chinese_scans_are_read_with_their_pages(self, real_scans: ModuleType) -> None:
        import difflib

        english = real_scans.sample_lines("en", 5, seed=1)
        chinese = real_scans.sample_lines("zh", 4, seed=2)
        doc = parse_bytes(real_scans.scanned_pdf([english, chinese]), "scan.pdf")
        assert doc.metadata["ocr_pages"] == "1,2"
        assert [p.number for p in doc.pages] == [1, 2]
        for span, lines in zip(doc.pages, (english, chinese), strict=True):
            want = "".join("".join(lines).split())
            got = "".join(doc.text[span.start:span.end].split())
            assert difflib.SequenceMatcher(None, want, got).ratio() >= 0.95, (want, got)

    def test_a_scanned_page_between_text_pages(self, real_scans: ModuleType) -> None:
        scan = real_scans.render_scan(["The warranty claim number is WX-4471."])

        def draw(c: canvas.Canvas, n: int) -> None:
            if n == 2:
                c.drawImage(ImageReader(scan), 0, 0, WIDTH, HEIGHT)
            else:
                body(c, n)
        doc = parse_bytes(make_pdf(3, draw), "mixed.pdf")
        assert doc.metadata["ocr_pages"] == "2"
        at = doc.text.index("WX-4471")
        assert chunk_location(doc.pages, at, at + 7)["page"] == 2
