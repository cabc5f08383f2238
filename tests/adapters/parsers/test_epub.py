"""E-books written by ebooklib (a test-only dependency) and by hand with zipfile, read by the epub parser that
does not use ebooklib: reading order, chapter labels from the table of contents, metadata, images, and
broken, hostile and DRM-protected books."""

from __future__ import annotations

import io
import zipfile

import pytest
from PIL import Image

from knora.adapters.parsers.epub import EpubParser
from knora.adapters.parsers.registry import context, parse_bytes
from knora.domain.document import chunk_location
from knora.ports.ocr import OcrLine, OcrResult
from knora.ports.parser import ParseContext, ParseError, ParseOptions

pytestmark = pytest.mark.unit


def _png(seed: int = 1) -> bytes:
    """A noisy picture (noise keeps it above the parser's 1 KiB floor for spacer images)."""
    import random

    rnd = random.Random(seed)
    img = Image.new("RGB", (64, 64))
    img.putdata([(rnd.randrange(256), rnd.randrange(256), rnd.randrange(256)) for _ in range(64 * 64)])
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


def make_epub(*, with_image: bool = False, toc: bool = True) -> bytes:
    from ebooklib import epub

    book = epub.EpubBook()
    book.set_identifier("knora-test-1")
    book.set_title("The Field Guide")
    book.set_language("en")
    book.add_author("Ann Author")
    book.add_author("李雷")
    c1 = epub.EpubHtml(title="Getting Started", file_name="text/c1.xhtml", lang="en")
    c1.content = ("<h1>Beginning</h1><p>The install takes four minutes.</p>"
                  + ('<p><img src="../images/fig.png" alt="figure one"/></p>' if with_image else ""))
    c2 = epub.EpubHtml(title="第二章 配置", file_name="text/c2.xhtml", lang="zh")
    c2.content = "<h2>配置</h2><p>默认的分块大小是五百一十二。</p>"
    c3 = epub.EpubHtml(title="Appendix", file_name="text/c3.xhtml")
    c3.content = "<h1>Appendix A</h1><table><tr><th>key</th><th>value</th></tr><tr><td>port</td>" \
                 "<td>8080</td></tr></table>"
    for chapter in (c1, c2, c3):
        book.add_item(chapter)
    if with_image:
        book.add_item(epub.EpubImage(uid="fig", file_name="images/fig.png", media_type="image/png",
                                     content=_png()))
    if toc:
        book.toc = (c1, c2, c3)
        book.add_item(epub.EpubNcx())
        book.add_item(epub.EpubNav())
        book.spine = ["nav", c1, c3, c2]  # reading order is the spine's, not the manifest's
    else:
        book.spine = [c1, c3, c2]
    buf = io.BytesIO()
    epub.write_epub(buf, book)
    return buf.getvalue()


def _zip(entries: dict[str, bytes | str]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, body in entries.items():
            z.writestr(name, body)
    return buf.getvalue()


_CONTAINER = ('<?xml version="1.0"?><container version="1.0" '
              'xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles>'
              '<rootfile full-path="OEBPS/book.opf" media-type="application/oebps-package+xml"/>'
              '</rootfiles></container>')


def _opf(spine: str, manifest: str, title: str = "Hand Made") -> str:
    return ('<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="2.0">'
            '<metadata xmlns:dc="http://purl.org/dc/elements/1.1/">'
            f'<dc:title>{title}</dc:title></metadata><manifest>{manifest}</manifest>'
            f'<spine>{spine}</spine></package>')


def _hand_book(**extra: bytes | str) -> dict[str, bytes | str]:
    return {
        "mimetype": "application/epub+zip",
        "META-INF/container.xml": _CONTAINER,
        "OEBPS/book.opf": _opf('<itemref idref="a"/><itemref idref="b"/>',
                               '<item id="a" href="one.xhtml" media-type="application/xhtml+xml"/>'
                               '<item id="b" href="two%20words.xhtml" media-type="application/xhtml+xml"/>'),
        "OEBPS/one.xhtml": "<html><body><h2>First Heading</h2><p>one body</p></body></html>",
        "OEBPS/two words.xhtml": "<html><head><title>T2</title></head><body><p>no heading here</p>"
                                 "</body></html>",
        **extra,
    }


def test_chapters_in_spine_order_labelled_from_the_toc_with_metadata() -> None:
    doc = parse_bytes(make_epub(), "guide.epub")
    assert doc.title == "The Field Guide"
    assert doc.metadata["author"] == "Ann Author, 李雷"
    assert doc.metadata["language"] == "en"
    labels = [(p.number, p.kind, p.label) for p in doc.pages]
    assert labels == [(1, "section", "Getting Started"), (2, "section", "Appendix"),
                      (3, "section", "第二章 配置")]
    first, appendix, chinese = (doc.text[p.start:p.end] for p in doc.pages)
    assert "four minutes" in first
    assert first.startswith("# Beginning")
    assert "| port | 8080 |" in appendix  # tables through the HTML parser
    assert "五百一十二" in chinese
    assert "Getting Started" not in first  # the nav document itself is not a chapter
    at = doc.text.index("五百一十二")
    assert chunk_location(doc.pages, at, at + 5) == {"page": 3, "page_kind": "section",
                                                     "page_label": "第二章 配置"}


def test_without_a_toc_the_first_heading_labels_the_chapter() -> None:
    doc = parse_bytes(make_epub(toc=False), "guide.epub")
    assert [p.label for p in doc.pages] == ["Beginning", "Appendix A", "配置"]


def test_a_hand_made_epub2_uses_headings_then_the_html_title() -> None:
    doc = parse_bytes(_zip(_hand_book()), "hand.epub")
    assert doc.title == "Hand Made"
    assert [p.label for p in doc.pages] == ["First Heading", "T2"]


def test_ncx_labels_when_there_is_no_nav_document() -> None:
    ncx = ('<?xml version="1.0"?><ncx xmlns="http://www.daisy.org/z3986/2005/ncx/" version="2005-1">'
           '<navMap><navPoint id="p1"><navLabel><text>Opening</text></navLabel><content src="one.xhtml#top"/>'
           '</navPoint></navMap></ncx>')
    book = _hand_book(**{"OEBPS/toc.ncx": ncx})
    book["OEBPS/book.opf"] = _opf(
        '<itemref idref="a"/><itemref idref="b"/>',
        '<item id="a" href="one.xhtml" media-type="application/xhtml+xml"/>'
        '<item id="b" href="two%20words.xhtml" media-type="application/xhtml+xml"/>'
        '<item id="ncx" href="toc.ncx" media-type="application/x-dtbncx+xml"/>').replace(
        "<spine>", '<spine toc="ncx">')
    doc = parse_bytes(_zip(book), "hand.epub")
    assert [p.label for p in doc.pages] == ["Opening", "T2"]


def test_a_missing_chapter_is_named_in_skipped() -> None:
    book = _hand_book()
    del book["OEBPS/two words.xhtml"]
    doc = parse_bytes(_zip(book), "hand.epub")
    assert "one body" in doc.text
    assert any("two words.xhtml" in s and "missing" in s for s in doc.skipped)


class _ReadsFigures:
    """An OCR engine that reads every picture as the same words (the real engine is another branch's)."""

    name = "figures"

    def __init__(self) -> None:
        self.calls = 0

    def recognize(self, image: bytes) -> OcrResult:
        self.calls += 1
        assert image.startswith(b"\x89PNG")
        return OcrResult(lines=[OcrLine(text="FIGURE SAYS HELLO", confidence=0.99, box=(0, 0, 1, 1))])


def test_images_become_parsed_images_with_ocr_text_in_their_chapter() -> None:
    engine = _ReadsFigures()
    ctx = ParseContext(max_expanded_bytes=64 * 1024 * 1024, options=ParseOptions(), ocr_loader=lambda: engine)
    doc = EpubParser(ctx).parse(make_epub(with_image=True), "guide.epub")
    assert engine.calls == 1
    (image,) = doc.images
    assert image.mime == "image/png"
    assert image.name.endswith("images/fig.png")
    assert image.page == 1
    assert doc.text[image.offset:].startswith("FIGURE SAYS HELLO")
    first = doc.pages[0]
    assert first.label == "Getting Started"
    assert first.start <= image.offset < first.end


def test_images_kept_without_ocr_when_ocr_is_off_and_dropped_when_extraction_is() -> None:
    doc = EpubParser(context(options=ParseOptions(ocr=False))).parse(make_epub(with_image=True), "g.epub")
    assert len(doc.images) == 1
    assert doc.images[0].ocr_text == ""
    doc = EpubParser(context(options=ParseOptions(extract_images=False))).parse(make_epub(with_image=True),
                                                                               "g.epub")
    assert doc.images == []


def test_font_obfuscation_is_fine_but_real_encryption_is_drm() -> None:
    fonts = ('<encryption xmlns="urn:oasis:names:tc:opendocument:xmlns:container" '
             'xmlns:enc="http://www.w3.org/2001/04/xmlenc#"><enc:EncryptedData>'
             '<enc:EncryptionMethod Algorithm="http://www.idpf.org/2008/embedding"/>'
             '<enc:CipherData><enc:CipherReference URI="OEBPS/font.otf"/></enc:CipherData>'
             '</enc:EncryptedData></encryption>')
    assert "one body" in parse_bytes(_zip(_hand_book(**{"META-INF/encryption.xml": fonts})), "f.epub").text
    aes = fonts.replace("http://www.idpf.org/2008/embedding", "http://www.w3.org/2001/04/xmlenc#aes128-cbc")
    with pytest.raises(ParseError, match="DRM"):
        parse_bytes(_zip(_hand_book(**{"META-INF/encryption.xml": aes})), "drm.epub")
    with pytest.raises(ParseError, match="DRM"):
        parse_bytes(_zip(_hand_book(**{"META-INF/rights.xml": "<rights/>"})), "adobe.epub")


@pytest.mark.parametrize(("entries", "reason"), [
    ({"OEBPS/book.opf": "<package><manifest>"}, "malformed XML"),
    ({"OEBPS/book.opf": None}, "package document"),
    ({"META-INF/container.xml": None, "OEBPS/book.opf": None}, "no package document"),
    ({"OEBPS/book.opf": _opf("", "")}, "no readable text"),
    ({"OEBPS/book.opf": _opf("", "").replace("<spine></spine>", "")}, "no spine"),
])
def test_broken_books_fail_with_a_reason(entries: dict[str, str | None], reason: str) -> None:
    book: dict[str, bytes | str] = _hand_book()
    for name, body in entries.items():
        if body is None:
            book.pop(name, None)
        else:
            book[name] = body
    with pytest.raises(ParseError, match=reason):
        parse_bytes(_zip(book), "broken.epub")


def test_not_a_zip_and_a_zip_bomb_are_refused() -> None:
    with pytest.raises(ParseError, match="zip"):
        parse_bytes(b"this is not an e-book at all", "fake.epub")
    bomb = _zip(_hand_book(**{"OEBPS/padding.xhtml": b"\0" * (8 * 1024 * 1024)}))
    with pytest.raises(ParseError, match="expand"):
        parse_bytes(bomb, "bomb.epub", max_expanded_bytes=1024 * 1024)


def test_entities_are_not_expanded() -> None:
    laughs = ('<?xml version="1.0"?><!DOCTYPE package [<!ENTITY a "aaaaaaaaaa">'
              '<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>'
              + _opf('<itemref idref="a"/>',
                     '<item id="a" href="one.xhtml" media-type="application/xhtml+xml"/>',
                     title="&b;").split("?>", 1)[1])
    doc = parse_bytes(_zip(_hand_book(**{"OEBPS/book.opf": laughs})), "laughs.epub")
    assert "aaaaaaaaaa" not in doc.title


def test_unreadable_and_oversized_images_are_skipped_by_name() -> None:
    import struct
    import zlib

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    # a PNG header claiming 50,000 × 50,000 pixels (its data is never decoded)
    huge = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 50_000, 50_000, 8, 2, 0, 0, 0)) \
        + chunk(b"IDAT", zlib.compress(b"\0" * 4096)) + chunk(b"IEND", b"")
    big = huge[:8] + chunk(b"IHDR", struct.pack(">IIBBBBB", 7_000, 7_000, 8, 2, 0, 0, 0)) + huge[33:]
    book = _hand_book(**{"OEBPS/huge.png": huge + b"\0" * 2048, "OEBPS/big.png": big + b"\0" * 2048,
                         "OEBPS/junk.png": b"not an image" * 200})
    book["OEBPS/one.xhtml"] = ('<html><body><p>text</p><img src="huge.png"/><img src="junk.png"/>'
                               '<img src="big.png"/></body></html>')
    doc = EpubParser(context(options=ParseOptions(ocr=False))).parse(_zip(book), "pics.epub")
    assert doc.images == []
    assert any("huge.png" in s and "bomb limit" in s for s in doc.skipped)
    assert any("big.png" in s and "7000×7000 pixels, above the limit" in s for s in doc.skipped)
    assert any("junk.png" in s and "not a readable image" in s for s in doc.skipped)


def test_the_toc_nav_wins_over_landmarks() -> None:
    nav = ('<html xmlns="http://www.w3.org/1999/xhtml" xmlns:epub="http://www.idpf.org/2007/ops"><body>'
           '<nav epub:type="landmarks"><ol><li><a href="one.xhtml">Start of content</a></li></ol></nav>'
           '<nav epub:type="toc"><ol><li><a href="one.xhtml">Chapter the First</a></li>'
           '<li><a href="two%20words.xhtml#s1">Chapter the Second</a></li></ol></nav></body></html>')
    book = _hand_book(**{"OEBPS/nav.xhtml": nav})
    book["OEBPS/book.opf"] = _opf(
        '<itemref idref="a"/><itemref idref="b"/>',
        '<item id="a" href="one.xhtml" media-type="application/xhtml+xml"/>'
        '<item id="b" href="two%20words.xhtml" media-type="application/xhtml+xml"/>'
        '<item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>')
    doc = parse_bytes(_zip(book), "nav.epub")
    assert [p.label for p in doc.pages] == ["Chapter the First", "Chapter the Second"]


class _Chokes:
    name = "chokes"

    def recognize(self, image: bytes) -> OcrResult:
        raise RuntimeError("onnxruntime: bad input")


def test_an_ocr_failure_costs_the_picture_text_not_the_book() -> None:
    ctx = ParseContext(max_expanded_bytes=64 * 1024 * 1024, options=ParseOptions(), ocr_loader=_Chokes)
    doc = EpubParser(ctx).parse(make_epub(with_image=True), "guide.epub")
    assert len(doc.images) == 1
    assert any("OCR of image" in s and "bad input" in s for s in doc.skipped)
    assert "four minutes" in doc.text
