"""Image files through ``parse_bytes`` (and one through a real worker process): OCR text, the image kept, page
spans, and every bad input ending in a readable ParseError. Images are rendered from text with Pillow
(tests/fakes/scans.py)."""

from __future__ import annotations

import io
import struct
import zlib

import pytest
from PIL import Image

from knora.adapters.parsers import _imaging, image
from knora.adapters.parsers.pool import ProcessParsers
from knora.adapters.parsers.registry import parse_bytes, supported_extensions
from knora.ports.parser import ParseError, ParseLimits, ParseOptions
from knora.settings import Settings
from tests.fakes.scans import char_accuracy, render_pages, render_scan, sample_lines, scan_png

OFF = ParseOptions(ocr=False)


def encoded(picture: Image.Image, fmt: str, **save: object) -> bytes:
    out = io.BytesIO()
    picture.save(out, fmt, **save)
    return out.getvalue()


def png_header(width: int, height: int) -> bytes:
    """A PNG that claims ``width`` × ``height`` (a few bytes of pixel data follow, never enough)."""
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\x00" * 64))
            + chunk(b"IEND", b""))


def test_every_image_extension_is_registered() -> None:
    assert {"png", "jpg", "jpeg", "webp", "tiff", "tif", "bmp", "gif"} <= supported_extensions()


def test_png_gives_its_text_the_image_and_page_one() -> None:
    lines = sample_lines("en", 5, seed=4)
    doc = parse_bytes(scan_png(lines, height_in=None), "scans/contract.png")
    assert char_accuracy(doc.text, "\n".join(lines)) >= 0.95, doc.text
    assert doc.title == "contract"
    assert doc.metadata["ocr"] == "rapidocr"
    assert doc.metadata["image_format"] == "PNG"
    assert [(p.number, p.start, p.end) for p in doc.pages] == [(1, 0, len(doc.text))]
    [picture] = doc.images
    assert (picture.mime, picture.page, picture.offset, picture.name) == ("image/png", 1, 0, "contract.png")
    assert picture.ocr_text == doc.text
    assert Image.open(io.BytesIO(picture.data)).size == (picture.width, picture.height)


@pytest.mark.parametrize(("fmt", "ext"), [("JPEG", "jpg"), ("WEBP", "webp"), ("BMP", "bmp")])
def test_chinese_in_other_formats(fmt: str, ext: str) -> None:
    lines = sample_lines("zh", 4, seed=5)
    doc = parse_bytes(encoded(render_scan(lines, height_in=None).convert("RGB"), fmt), f"通知.{ext}")
    assert char_accuracy(doc.text, "".join(lines)) >= 0.95, doc.text
    assert doc.images[0].mime == ("image/jpeg" if fmt in ("JPEG", "WEBP") else "image/png")


def test_gif_gives_its_first_frame_only() -> None:
    first, second = (render_scan([text], height_in=None, noise=0).convert("P")
                     for text in ("First frame says hello", "Second frame says goodbye"))
    doc = parse_bytes(encoded(first, "GIF", save_all=True, append_images=[second], duration=100), "a.gif")
    assert "hello" in doc.text
    assert "goodbye" not in doc.text
    assert doc.metadata["image_pages"] == "1"


def test_multi_page_tiff_gives_one_page_span_per_frame() -> None:
    pages = [render_scan([f"This is page number {n} of the fax"], height_in=None) for n in (1, 2, 3)]
    data = encoded(pages[0], "TIFF", save_all=True, append_images=pages[1:], compression="tiff_deflate")
    doc = parse_bytes(data, "fax.tiff")
    assert [p.number for p in doc.pages] == [1, 2, 3]
    for span, n in zip(doc.pages, (1, 2, 3), strict=True):
        assert f"page number {n}" in doc.text[span.start:span.end]
    assert [(i.page, i.name) for i in doc.images] == [(n, f"fax.tiff, page {n}") for n in (1, 2, 3)]
    assert [doc.text[i.offset:].startswith("This is page") for i in doc.images] == [True] * 3


def test_tiff_pages_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(image, "MAX_FRAMES", 2)
    pages = [Image.new("L", (200, 100), 255) for _ in range(3)]
    doc = parse_bytes(encoded(pages[0], "TIFF", save_all=True, append_images=pages[1:]), "many.tif",
                      options=OFF)
    assert [p.number for p in doc.pages] == [1, 2]
    assert doc.skipped == ["pages after 2: a TIFF is read up to 2 pages"]


def test_with_ocr_off_the_image_is_kept_under_a_line_naming_it() -> None:
    data = scan_png(["Nothing will read this"], height_in=None)
    width, height = Image.open(io.BytesIO(data)).size
    doc = parse_bytes(data, "photo.png", options=OFF)
    assert doc.text == (f"[Image photo.png: {width} × {height} pixels, PNG; "
                        "OCR was turned off for this upload.]")
    assert doc.metadata["ocr"] == "none"
    assert doc.metadata["ocr_note"] == "OCR was turned off for this upload"
    assert doc.skipped == []
    assert len(doc.images) == 1
    assert doc.images[0].offset == 0
    assert doc.images[0].ocr_text == ""


def test_an_image_without_text_says_so() -> None:
    doc = parse_bytes(encoded(Image.new("RGB", (640, 480), (200, 220, 240)), "PNG"), "sky.png")
    assert doc.text == "[Image sky.png: 640 × 480 pixels, PNG; no text was recognised in it.]"
    assert doc.metadata["ocr"] == "none"


def test_when_the_time_budget_is_used_ocr_stops_and_says_so() -> None:
    pages = [render_scan([f"Budget page {n}"], height_in=None) for n in (1, 2)]
    data = encoded(pages[0], "TIFF", save_all=True, append_images=pages[1:])
    doc = parse_bytes(data, "slow.tiff", options=ParseOptions(time_budget_seconds=1e-9))
    assert doc.skipped == ["OCR of pages 1 and after: the time budget of 1e-09 s was used"]
    assert "time budget" in doc.text
    assert len(doc.images) == 2


def test_a_huge_image_is_refused_from_its_header() -> None:
    with pytest.raises(ParseError, match=r"20000 × 20000 pixels \(400 megapixels\).*limit of 50 megapixels"):
        parse_bytes(png_header(20_000, 20_000), "huge.png")


def test_a_huge_image_beyond_pillows_own_limit_is_refused() -> None:
    with pytest.raises(ParseError, match=r"'bomb.png': it is 100000 × 100000 pixels \(10000 megapixels\)"):
        parse_bytes(png_header(100_000, 100_000), "bomb.png")


def test_a_large_jpeg_is_decoded_smaller_instead(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_imaging, "MAX_PIXELS", 1_000_000)
    data = encoded(Image.new("RGB", (1600, 1200), (255, 255, 255)), "JPEG")
    doc = parse_bytes(data, "big.jpg", options=OFF)
    assert "800 × 600 pixels" in doc.text
    assert doc.metadata["image_width"] == "800"


def test_a_truncated_image_is_a_parse_error() -> None:
    data = scan_png(["cut short"], height_in=None)
    with pytest.raises(ParseError, match="damaged or truncated"):
        parse_bytes(data[: len(data) // 2], "cut.png")


def test_a_corrupt_header_is_a_parse_error() -> None:
    data = bytearray(encoded(Image.new("L", (64, 64), 255), "PNG"))
    data[20:24] = b"\xff\xff\xff\xff"  # the IHDR's width and its CRC no longer agree
    with pytest.raises(ParseError, match="image"):
        parse_bytes(bytes(data), "bad.png")


@pytest.mark.parametrize("payload", [b"just some text in a file named like an image\n",
                                     b"%PDF-1.4\n1 0 obj<<>>endobj\n", b"%!PS-Adobe-3.0 EPSF-3.0\n"])
def test_a_non_image_with_an_image_extension_is_a_parse_error(payload: bytes) -> None:
    with pytest.raises(ParseError, match="not an image format that can be read"):
        parse_bytes(payload, "fake.jpg")


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.timeout(240)
async def test_ocr_fits_in_a_worker_under_the_default_memory_limit() -> None:
    """Full A4 pages at 200 dpi, one after the other in one real worker process capped at the default address
    space (at 1024 MB the third or fourth page failed)."""
    limit = Settings().parse_memory_limit_mb
    pool = ProcessParsers(ParseLimits(64 << 20, limit, 200.0), workers=1)
    try:
        for n, lang in enumerate(("en", "zh", "en", "zh")):
            lines = sample_lines(lang, 30, seed=n)  # type: ignore[arg-type]
            doc = await pool.parse(scan_png(lines), f"page-{lang}.png")
            assert char_accuracy(doc.text, "\n".join(lines)) >= 0.95, doc.text
            assert doc.metadata["ocr"] == "rapidocr"
    finally:
        await pool.aclose()


def test_render_pages_flows_text_onto_pages() -> None:
    assert len(render_pages(sample_lines("en", 60))) >= 2


def test_an_unknown_ocr_engine_leaves_the_image_parsed_and_says_why() -> None:
    doc = parse_bytes(scan_png(["Engine missing"], height_in=None), "x.png",
                      options=ParseOptions(ocr_engine="tesseract-9"))
    assert doc.metadata["ocr"] == "none"
    assert "OCR is not available on this server" in doc.text
    [reason] = doc.skipped
    assert reason.startswith("OCR is not available on this server (there is no OCR engine 'tesseract-9'")
