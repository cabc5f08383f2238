"""Markdown and HTML with images written into them as ``data:`` URIs: decoded into ``ParsedImage``s where
they were (after their paragraph, OCR text included), the base64 gone from the text, bounded in size and
count; documents without such images parse exactly as before."""

from __future__ import annotations

import base64

import pytest

from knora.adapters.parsers._images import MAX_IMAGES
from knora.adapters.parsers.html import HtmlParser
from knora.adapters.parsers.md import MarkdownParser
from knora.adapters.parsers.registry import parse_bytes
from tests.adapters.parsers.images import SizeReader, ocr_context, png

pytestmark = pytest.mark.unit


def uri(data: bytes, mime: str = "image/png") -> str:
    return f"data:{mime};base64," + base64.b64encode(data).decode()


def test_markdown_data_uri_images_become_images_in_place() -> None:
    source = (f"# Report\n\nThe chart ![revenue chart]({uri(png(200, 100))}) shows growth.\n\n"
              f"Next paragraph.\n\n<img alt=\"logo\" src=\"{uri(png(64, 64))}\">\n\n"
              "Remote ![x](https://example.com/x.png) and relative ![y](img/y.png) stay links.")
    reader = SizeReader()
    doc = MarkdownParser(ocr_context(reader)).parse(source.encode(), "r.md")
    assert "base64" not in doc.text
    assert doc.text.startswith("# Report\n\nThe chart [image: revenue chart] shows growth.\n\nIMAGE 200x100"
                               "\n\nNext paragraph.\n\n[image: logo]\n\nIMAGE 64x64")
    assert "![x](https://example.com/x.png)" in doc.text
    assert "![y](img/y.png)" in doc.text
    assert [(i.width, i.height, i.name) for i in doc.images] == [(200, 100, "revenue chart"),
                                                                 (64, 64, "logo")]
    for image in doc.images:
        assert doc.text[image.offset:].startswith(f"IMAGE {image.width}x{image.height}")
    assert reader.calls == 2
    assert doc.title == "Report"


def test_markdown_without_data_uris_is_unchanged() -> None:
    source = b"---\ntitle: Notes\n---\n# Heading\n\nText with ![pic](a.png).\n"
    doc = parse_bytes(source, "n.md")
    assert doc.text == "# Heading\n\nText with ![pic](a.png)."
    assert doc.title == "Notes"
    assert doc.images == []


def test_html_data_uri_images_become_images_and_links_stay() -> None:
    html = (f"<html><head><title>Page</title></head><body><nav><img src=\"{uri(png(90, 90))}\"></nav>"
            f"<main><h1>Specs</h1><p>Diagram: <img alt=\"wiring\" src=\"{uri(png(150, 80))}\"> here.</p>"
            "<p>Remote <img alt=\"r\" src=\"https://example.com/r.png\"></p>"
            f"<table><tr><th>part</th><th>photo</th></tr><tr><td>bolt</td>"
            f"<td><img src=\"{uri(png(40, 40))}\"></td></tr></table></main></body></html>")
    doc = HtmlParser(ocr_context()).parse(html.encode(), "p.html")
    assert "base64" not in doc.text
    assert doc.text.startswith("# Specs\n\nDiagram: [image: wiring] here.\n\nIMAGE 150x80\n\n")
    assert "![r](https://example.com/r.png)" in doc.text
    assert "| bolt | [image] |" in doc.text
    assert doc.text.endswith("IMAGE 40x40")
    assert [i.width for i in doc.images] == [150, 40]  # the one in <nav> went with the navigation


def test_html_data_uris_that_are_no_images_and_plain_links() -> None:
    doc = parse_bytes(b"<html><body><p>Hello <img src='data:image/svg+xml,%3Csvg%3E'> there</p></body>"
                      b"</html>", "h.html")
    assert doc.text == "Hello [image] there"
    assert doc.images == []
    assert doc.skipped == ["1 image left out: the data: URI is not a base64-encoded image"]
    plain = parse_bytes(b"<html><body><h1>T</h1><p>Hello <img src='x.png' alt='a'></p></body></html>",
                        "h.html")
    assert plain.text == "# T\n\nHello ![a](x.png)"


def test_giant_and_broken_data_uris_never_reach_the_text() -> None:
    giant = "data:image/png;base64," + "A" * (30 * 1024 * 1024)  # ~22 MB decoded, above the 20 MB bound
    broken = uri(png(300, 300, "red")[:-40])  # truncated
    garbage = uri(b"\x89PNG\r\n\x1a\n not really a png" * 10)
    pixel_bomb = uri(_huge_canvas_png())
    source = (f"Before ![big]({giant}) mid ![bad]({broken}) ![junk]({garbage}) and ![bomb]({pixel_bomb}) "
              "after.")
    doc = MarkdownParser(ocr_context(ocr=False)).parse(source.encode(), "g.md")
    assert doc.text == ("Before [image: big] mid [image: bad] [image: junk] and [image: bomb] "
                        "after.")
    assert doc.images == []
    assert sorted(doc.skipped) == ["1 image left out: damaged image data",
                                   "1 image left out: larger than 20 MB",
                                   "1 image left out: more than 40000000 pixels",
                                   "1 image left out: not an image format this install reads"]


def _huge_canvas_png() -> bytes:
    """A 20,000 × 20,000 PNG that compresses to a few hundred KB: a pixel bomb for whoever decodes it."""
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.new("1", (20_000, 20_000)).save(buf, "PNG")
    return buf.getvalue()


def test_image_count_is_bounded() -> None:
    one = uri(png(40, 40))
    source = "\n\n".join(f"![i{n}]({one})" for n in range(MAX_IMAGES + 25))
    doc = MarkdownParser(ocr_context(ocr=False)).parse(source.encode(), "many.md")
    assert len(doc.images) == MAX_IMAGES
    assert doc.skipped == [f"25 images left out: more than {MAX_IMAGES} images in the document"]
    assert "base64" not in doc.text


def test_other_long_base64_payloads_are_dropped_from_markdown() -> None:
    blob = "data:application/pdf;base64," + "QUJD" * 600
    doc = parse_bytes(f"See [the file]({blob}).".encode(), "f.md")
    assert doc.text == "See [the file]([embedded data])."


def test_ocr_off_keeps_images_without_text_and_no_images_keeps_only_ocr() -> None:
    source = f"Para ![c]({uri(png(100, 50))})".encode()
    reader = SizeReader()
    off = MarkdownParser(ocr_context(reader, ocr=False)).parse(source, "a.md")
    assert off.text == "Para [image: c]"
    assert len(off.images) == 1
    assert reader.calls == 0
    text_only = MarkdownParser(ocr_context(reader, extract_images=False)).parse(source, "a.md")
    assert text_only.text == "Para [image: c]\n\nIMAGE 100x50"
    assert text_only.images == []


def test_gif_and_bmp_are_re_encoded_as_png() -> None:
    import io

    from PIL import Image

    def encoded(fmt: str) -> bytes:
        buf = io.BytesIO()
        Image.new("RGB", (50, 40), "green").save(buf, fmt)
        return buf.getvalue()

    source = f"![g]({uri(encoded('GIF'), 'image/gif')})\n\n![b]({uri(encoded('BMP'), 'image/bmp')})"
    doc = MarkdownParser(ocr_context(ocr=False)).parse(source.encode(), "a.md")
    png_magic = b"\x89PNG\r\n\x1a\n"
    assert [(i.mime, i.width, i.data[:8]) for i in doc.images] == [("image/png", 50, png_magic)] * 2


def test_the_images_of_one_document_are_bounded_in_bytes_too() -> None:
    from knora.adapters.parsers._images import ImageCollector

    limit = 3 * len(png(64, 64))
    collector = ImageCollector(ocr_context(ocr=False), max_total_bytes=limit)
    kept = [collector.image(png(64, 64)) for _ in range(5)]
    assert sum(1 for k in kept if k is not None) == 3
    assert collector.skipped == [f"2 images left out: the document's images pass {limit} bytes in all"]


def test_a_giant_html_data_uri_is_named_not_silently_lost() -> None:
    giant = "data:image/png;base64," + "A" * (30 * 1024 * 1024)  # lxml alone drops attributes over 10 MB
    html = f"<p>Before</p><p><img alt='scan' src=\"{giant}\"></p><p>After</p>".encode()
    doc = HtmlParser(ocr_context(ocr=False)).parse(html, "big.html")
    assert doc.text == "Before\n\n[image: scan]\n\nAfter"
    assert doc.skipped == ["1 image left out: larger than 20 MB"]
    forged = HtmlParser(ocr_context(ocr=False)).parse(b"<p>x <img src='knora-lifted-data:7'></p>", "f.html")
    assert forged.text == "x ![](knora-lifted-data:7)"
