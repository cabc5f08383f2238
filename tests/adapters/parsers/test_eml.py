"""E-mail (.eml) on messages the tests build with the ``email`` package: headers, bodies in many charsets,
attachments (PDF by reportlab, DOCX by python-docx, CSV, a PNG by Pillow) parsed recursively, and hostile
mail (500 attachments, nesting 10 deep, a zip bomb inside, garbage)."""

from __future__ import annotations

import io
from email.message import EmailMessage
from email.mime.multipart import MIMEMultipart
from email.mime.text import MIMEText

import pytest
from PIL import Image

from knora.adapters.parsers._mail import MAX_ATTACHMENTS, MAX_DEPTH
from knora.adapters.parsers.registry import context, parse_bytes, parse_with, supported_extensions
from knora.domain.document import chunk_location, location_text
from knora.ports.ocr import OcrLine, OcrResult
from knora.ports.parser import ParseContext, ParsedDocument, ParseError, ParseOptions
from tests.adapters.parsers.test_parsers import make_docx, make_pdf
from tests.fakes.bombs import lying_docx

pytestmark = pytest.mark.unit


def png(text: str = "", size: tuple[int, int] = (120, 40)) -> bytes:
    """A real PNG (Pillow); ``text`` is stored in a tEXt chunk, which ``PngTextOcr`` below reads back."""
    from PIL import Image, PngImagePlugin

    info = PngImagePlugin.PngInfo()
    if text:
        info.add_text("ocr", text)
    buf = io.BytesIO()
    Image.new("RGB", size, "white").save(buf, format="PNG", pnginfo=info)
    return buf.getvalue()


class PngTextOcr:
    """A deterministic OCR engine for tests: it "recognises" the text a ``png(text)`` carries (the real
    engine's accuracy is tested with the OCR adapter; here only the e-mail's wiring is)."""

    name = "png-text"

    def recognize(self, image: bytes) -> OcrResult:
        from PIL import Image

        with Image.open(io.BytesIO(image)) as img:
            text = str(img.info.get("ocr", ""))
        return OcrResult(lines=[OcrLine(text=text, confidence=1.0, box=(0, 0, 1, 1))] if text else [])

    def recognize_image(self, image: Image.Image) -> OcrResult:
        """What the image parser calls with the pixels it decoded (they keep the PNG's text chunk)."""
        text = str(image.info.get("ocr", ""))
        return OcrResult(lines=[OcrLine(text=text, confidence=1.0, box=(0, 0, 1, 1))] if text else [])


def ocr_context(max_expanded_bytes: int = 64 << 20) -> ParseContext:
    return ParseContext(max_expanded_bytes=max_expanded_bytes, options=ParseOptions(ocr=True),
                        ocr_loader=PngTextOcr)


def message(subject: str = "Budget 2026", body: str = "Please find the budget attached.") -> EmailMessage:
    m = EmailMessage()
    m["From"] = "Ann Lee <ann@example.com>"
    m["To"] = "Bob <bob@example.com>, carol@example.com"
    m["Cc"] = "dave@example.com"
    m["Date"] = "Mon, 07 Dec 2026 10:00:00 +0800"
    m["Subject"] = subject
    m.set_content(body)
    return m


def span_text(doc: ParsedDocument, label: str) -> str:
    spans = [p for p in doc.pages if p.label == label or p.label.startswith(label + ", ")]
    assert spans, f"no span {label!r} in {[p.label for p in doc.pages]}"
    return doc.text[spans[0].start:spans[-1].end]


def test_headers_body_and_attachments_each_as_a_cited_span() -> None:
    m = message()
    m.add_attachment(make_pdf(["Revenue grew 12 percent in Q3."]), maintype="application", subtype="pdf",
                     filename="report.pdf")
    m.add_attachment(make_docx(), maintype="application",
                     subtype="vnd.openxmlformats-officedocument.wordprocessingml.document",
                     filename="guide.docx")
    m.add_attachment(b"item,cost\nservers,4000\nlicences,1200\n", maintype="text", subtype="csv",
                     filename="budget.csv")
    doc = parse_bytes(m.as_bytes(), "mail.eml")
    assert doc.title == "Budget 2026"
    head = doc.text.split("\n\n")[0]
    assert head.splitlines() == ["From: Ann Lee <ann@example.com>",
                                 "To: Bob <bob@example.com>, carol@example.com", "Cc: dave@example.com",
                                 "Date: Mon, 07 Dec 2026 10:00:00 +0800", "Subject: Budget 2026"]
    assert "Please find the budget attached." in doc.text
    assert doc.text.index("Please find") < doc.pages[0].start  # the body comes first, outside any span
    assert "Revenue grew 12 percent" in span_text(doc, "report.pdf")
    assert "Installation Guide" in span_text(doc, "guide.docx")
    assert "| servers | 4000 |" in span_text(doc, "budget.csv")
    assert [p.kind for p in doc.pages] == ["attachment"] * len(doc.pages)
    starts = [p.start for p in doc.pages]
    assert starts == sorted(starts)
    assert all(a.end <= b.start for a, b in zip(doc.pages, doc.pages[1:], strict=False))
    at = doc.text.index("servers")
    assert location_text(dict(chunk_location(doc.pages, at, at + 10))) == "attachment budget.csv"
    assert doc.metadata["format"] == "eml"
    assert doc.metadata["attachments"] == "3"
    assert doc.skipped == []


@pytest.mark.parametrize("charset", ["gb2312", "gbk", "gb18030", "utf-8"])
def test_chinese_subject_and_body_in_their_charsets(charset: str) -> None:
    m = message(subject="二〇二六年预算", body="")
    m.set_content("预算已批准，请查收附件。", charset=charset)
    doc = parse_bytes(m.as_bytes(), "mail.eml")
    assert doc.title == "二〇二六年预算"
    assert "预算已批准，请查收附件。" in doc.text


@pytest.mark.parametrize(("charset", "text"), [("big5", "會議紀錄"), ("iso-2022-jp", "会議の議事録"),
                                               ("shift_jis", "会議の議事録"), ("koi8-r", "Протокол")])
def test_other_charsets_in_headers_and_body(charset: str, text: str) -> None:
    from email.header import Header

    m = MIMEText(text, "plain", charset)
    m["Subject"] = Header(text, charset).encode()
    m["From"] = "x@example.com"
    doc = parse_bytes(m.as_bytes(), "mail.eml")
    assert doc.title == text
    assert text in doc.text


def test_broken_and_lying_charset_labels_fall_back_sensibly() -> None:
    raw = ("From: a@example.com\r\nSubject: =?x-no-such-charset?B?"
           + __import__("base64").b64encode("季度报告".encode()).decode()
           + "?=\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=us-ascii\r\n"
           "Content-Transfer-Encoding: 8bit\r\n\r\n").encode() + "正文是 UTF-8，标签却说 ASCII。".encode()
    doc = parse_bytes(raw, "mail.eml")
    assert doc.title == "季度报告"
    assert "正文是 UTF-8，标签却说 ASCII。" in doc.text
    gbk = (b"From: a@example.com\r\nSubject: plain\r\nContent-Type: text/plain; charset=\"unknown-8bit\"\r\n"
           b"Content-Transfer-Encoding: 8bit\r\n\r\n" + "中文正文".encode("gbk"))
    assert "中文正文" in parse_bytes(gbk, "mail.eml").text


def test_html_only_body_goes_through_the_html_extraction() -> None:
    m = message(body="")
    m.set_content("<html><head><style>p{}</style><script>alert(1)</script></head><body><h1>Launch</h1>"
                  "<p>The launch moves to <b>March</b>.</p><table><tr><th>a</th><th>b</th></tr>"
                  "<tr><td>1</td><td>2</td></tr></table></body></html>", subtype="html")
    doc = parse_bytes(m.as_bytes(), "mail.eml")
    assert "# Launch" in doc.text
    assert "The launch moves to March." in doc.text
    assert "| 1 | 2 |" in doc.text
    assert "alert" not in doc.text


def test_plain_text_is_preferred_over_its_html_alternative() -> None:
    m = message(body="Plain version.")
    m.add_alternative("<p>HTML version.</p>", subtype="html")
    doc = parse_bytes(m.as_bytes(), "mail.eml")
    assert "Plain version." in doc.text
    assert "HTML version." not in doc.text


def test_inline_image_is_kept_and_ocr_read_and_an_attached_image_is_a_span() -> None:
    m = message(body="")
    m.set_content("See the chart.")
    m.add_alternative('<p>See the chart: <img src="cid:chart1"></p>', subtype="html")
    m.get_payload()[1].add_related(png("CHART TOTAL 4711"), maintype="image", subtype="png", cid="<chart1>")
    m.add_attachment(png("RECEIPT 99 EUR"), maintype="image", subtype="png", filename="receipt.png")
    doc = parse_with(ocr_context(), m.as_bytes(), "mail.eml")
    assert [i.name for i in doc.images][:1]
    assert len(doc.images) == 2
    inline, attached = doc.images
    assert doc.text[inline.offset:].startswith("CHART TOTAL 4711")
    assert inline.page is None
    assert "RECEIPT 99 EUR" in span_text(doc, "receipt.png")
    assert doc.text[attached.offset:].startswith("RECEIPT 99 EUR")
    assert attached.page == 1
    assert inline.width == 120
    assert inline.data.startswith(b"\x89PNG")


def test_images_without_ocr_are_kept_without_text() -> None:
    m = message()
    m.add_attachment(png("NOT READ"), maintype="image", subtype="png", filename="photo.png")
    opts = ParseOptions(ocr=False)
    doc = parse_bytes(m.as_bytes(), "mail.eml", options=opts)
    assert len(doc.images) == 1
    assert "NOT READ" not in doc.text


def test_archives_unsupported_and_failed_attachments_are_named_in_skipped() -> None:
    m = message()
    m.add_attachment(b"PK\x05\x06" + b"\0" * 18, maintype="application", subtype="zip", filename="all.zip")
    m.add_attachment(b"Rar!\x1a\x07\x00", maintype="application", subtype="x-rar", filename="more.rar")
    m.add_attachment(b"MZ\x90\x00binary", maintype="application", subtype="octet-stream",
                     filename="setup.exe")
    m.add_attachment(b"not a pdf at all", maintype="application", subtype="pdf", filename="broken.pdf")
    m.add_attachment(b"name,value\nok,1\n", maintype="text", subtype="csv", filename="fine.csv")
    doc = parse_bytes(m.as_bytes(), "mail.eml")
    assert "| ok | 1 |" in span_text(doc, "fine.csv")
    assert doc.skipped == ["attachment all.zip: archives (.zip) are not opened",
                           "attachment more.rar: archives (.rar) are not opened",
                           "attachment setup.exe: unsupported type .exe (application/octet-stream)",
                           "attachment broken.pdf: not a PDF file (missing the %PDF header)"]


def test_a_zip_bomb_attachment_is_refused_by_the_inner_parser() -> None:
    m = message()
    m.add_attachment(lying_docx(real_bytes=32 << 20, claimed_bytes=4096), maintype="application",
                     subtype="vnd.openxmlformats-officedocument.wordprocessingml.document",
                     filename="bomb.docx")
    m.add_attachment(b"after the bomb\n", maintype="text", subtype="plain", filename="after.txt")
    doc = parse_bytes(m.as_bytes(), "mail.eml", max_expanded_bytes=8 << 20)
    assert len(doc.skipped) == 1
    assert doc.skipped[0].startswith("attachment bomb.docx: refusing .docx")
    assert "after the bomb" in span_text(doc, "after.txt")


def test_500_attachments_end_partially_parsed_with_what_was_left_out() -> None:
    m = message()
    for i in range(500):
        m.add_attachment(f"note number {i}\n".encode(), maintype="text", subtype="plain",
                         filename=f"n{i}.txt")
    doc = parse_bytes(m.as_bytes(), "mail.eml")
    assert len(doc.pages) == MAX_ATTACHMENTS
    assert "note number 99" in doc.text
    assert "note number 100" not in doc.text
    assert doc.skipped == [f"400 attachments not parsed: at most {MAX_ATTACHMENTS} are parsed per e-mail "
                           "(n100.txt, n101.txt, n102.txt, n103.txt, n104.txt, n105.txt, n106.txt, n107.txt, "
                           "n108.txt, n109.txt and 390 more)"]


def test_attachments_share_the_expanded_bytes_budget() -> None:
    m = message()
    for i in range(5):
        m.add_attachment((f"file {i} " * 40_000).encode(), maintype="text", subtype="plain",
                         filename=f"f{i}.txt")
    doc = parse_bytes(m.as_bytes(), "mail.eml", max_expanded_bytes=1_000_000)  # each is ~280 KB, twice
    assert "file 0" in doc.text
    assert "file 4" not in doc.text
    assert doc.skipped[-1].startswith("3 attachments not parsed: the e-mail's attachments exceed the limit "
                                      "of 1000000 expanded bytes (f2.txt, f3.txt, f4.txt)")


def nested(depth: int) -> EmailMessage:
    inner = message(subject="level 0", body="the innermost body")
    for level in range(1, depth + 1):
        outer = message(subject=f"level {level}", body=f"body of level {level}")
        outer.add_attachment(inner)
        inner = outer
    return inner


def test_forwarded_messages_are_parsed_with_their_own_attachments() -> None:
    fwd = message(subject="Fwd: numbers", body="forwarded body")
    fwd.add_attachment(b"q,v\nq3,17\n", maintype="text", subtype="csv", filename="numbers.csv")
    m = message()
    m.add_attachment(fwd)
    doc = parse_bytes(m.as_bytes(), "mail.eml")
    assert "forwarded body" in span_text(doc, "Fwd: numbers.eml")
    at = doc.text.index("| q3 | 17 |")
    assert location_text(dict(chunk_location(doc.pages, at, at + 5))) == \
        "attachment Fwd: numbers.eml, attachment numbers.csv"


def test_nesting_10_deep_stops_at_the_depth_limit() -> None:
    doc = parse_bytes(nested(10).as_bytes(), "mail.eml")
    assert f"body of level {10 - MAX_DEPTH}" in doc.text
    assert f"body of level {10 - MAX_DEPTH - 1}" not in doc.text
    assert doc.skipped == ["attachment level 9.eml / level 8.eml / level 7.eml / level 6.eml: a message "
                           f"nested more than {MAX_DEPTH} levels deep is not opened"]


def test_a_truncated_message_keeps_what_can_be_read() -> None:
    m = message(body="the body before the cut")
    m.add_attachment(b"x" * 5000, maintype="text", subtype="plain", filename="long.txt")
    raw = m.as_bytes()
    doc = parse_bytes(raw[: len(raw) - 3000], "mail.eml")
    assert "the body before the cut" in doc.text
    assert any("truncated" in s for s in doc.skipped)


@pytest.mark.parametrize("data", [
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 4,
    b"just some words in a file that is not an e-mail at all\nsecond line\n",
    "列表：苹果，香蕉\n".encode(),
])
def test_what_is_not_an_e_mail_is_refused(data: bytes) -> None:
    with pytest.raises(ParseError, match="not an e-mail file"):
        parse_bytes(data, "mail.eml")


def test_an_outlook_item_saved_as_eml_is_read_as_one() -> None:
    from tests.fakes.cfb import MsgSpec, make_msg

    doc = parse_bytes(make_msg(MsgSpec(subject="Outlook item", body="from Outlook")), "saved.eml")
    assert doc.title == "Outlook item"
    assert "from Outlook" in doc.text


def test_a_multipart_built_the_old_way_and_registered() -> None:
    m = MIMEMultipart()
    m["Subject"] = "old style"
    m["From"] = "a@example.com"
    m.attach(MIMEText("old body", "plain", "utf-8"))
    doc = parse_with(context(), m.as_bytes(), "old.eml")
    assert "old body" in doc.text
    assert "eml" in supported_extensions()
    assert "msg" in supported_extensions()


def nested_multipart(levels: int) -> bytes:
    raw = b"From: a@example.com\r\nSubject: deep\r\nMIME-Version: 1.0\r\n"
    for i in range(levels):
        raw += b'Content-Type: multipart/mixed; boundary="b%d"\r\n\r\n--b%d\r\n' % (i, i)
    raw += b"Content-Type: text/plain\r\n\r\ninnermost text\r\n"
    return raw + b"".join(b"--b%d--\r\n" % i for i in reversed(range(levels)))


def test_multiparts_nested_deeply_are_cut_or_refused() -> None:
    doc = parse_bytes(nested_multipart(60), "deep.eml")
    assert doc.skipped == ["MIME parts nested more than 50 levels deep were not read"]
    with pytest.raises(ParseError, match="nested too deeply"):
        parse_bytes(nested_multipart(3000), "deeper.eml")


def test_a_header_of_200000_encoded_words_is_read_only_at_its_start() -> None:
    # email.header.decode_header is quadratic in the number of words: 200,000 of them took 74 s uncut
    raw = b"From: a@example.com\r\nSubject: " + b"=?utf-8?B?5Lit5paH?= " * 200_000 + b"\r\n\r\nbody"
    doc = parse_bytes(raw, "header.eml")
    assert doc.title.startswith("中文中文")
    assert len(doc.title) <= 2000


def huge_png(width: int, height: int) -> bytes:
    """A PNG whose header claims ``width`` x ``height`` (its pixel data is a few bytes, so it is cheap to
    make and must never be decoded)."""
    import struct
    import zlib

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\0" * 64)) + \
        chunk(b"IEND", b"")


def test_a_20000_by_20000_inline_image_is_named_not_decoded() -> None:
    m = message()
    m.add_attachment(huge_png(20_000, 20_000), maintype="image", subtype="png", disposition="inline",
                     filename="huge.png")
    m.add_attachment(huge_png(8_000, 6_000), maintype="image", subtype="png", disposition="inline",
                     filename="big.png")
    doc = parse_with(ocr_context(), m.as_bytes(), "mail.eml")
    assert doc.skipped[0].startswith("image huge.png: not a readable image")
    assert doc.skipped[1] == "image big.png: 8000x6000 pixels, too large for OCR"
    assert [i.name for i in doc.images] == ["big.png"]


@pytest.mark.parametrize("charset", ["utf-8", "gbk"])
def test_raw_8_bit_headers_are_decoded_not_replaced(charset: str) -> None:
    raw = (b"From: " + "张三".encode(charset) + b" <z@example.cn>\r\nSubject: " + "会议纪要".encode(charset)
           + b"\r\nContent-Type: text/plain; charset=" + charset.encode() + b"\r\n\r\n"
           + "正文".encode(charset))
    doc = parse_bytes(raw, "mail.eml")
    assert doc.title == "会议纪要"
    assert doc.text.startswith("From: 张三 <z@example.cn>\nSubject: 会议纪要\n\n正文")
