from __future__ import annotations

import pytest

from knora.adapters.parsers._common import TextBuilder, normalise_text
from knora.adapters.parsers.registry import PARSERS, parse_bytes, register
from knora.ports.parser import ParsedDocument, ParsedImage

pytestmark = pytest.mark.unit


def test_spans_and_images_point_into_the_text() -> None:
    b = TextBuilder()
    b.add("  Page one\r\ntext  \n", page=1)
    b.add("more of page one", page=1)
    b.add("   ", page=2)  # blank: no span
    b.add_image(ParsedImage(data=b"png", ocr_text="TEXT IN A PICTURE"), page=2)
    b.add("Slide-less tail")
    text = b.text
    assert text == normalise_text(text)
    assert [(p.number, text[p.start:p.end]) for p in b.pages] == [
        (1, "Page one\ntext\n\nmore of page one"), (2, "TEXT IN A PICTURE")]
    image = b.images[0]
    assert text[image.offset:].startswith("TEXT IN A PICTURE")
    assert image.page == 2


def test_an_image_without_text_sits_where_it_was_placed() -> None:
    b = TextBuilder()
    b.add("before", page=1)
    b.add_image(ParsedImage(data=b"png"), page=1)
    b.add("after", page=1)
    assert b.text[:b.images[0].offset] == "before"


class _Sloppy:
    extensions = frozenset({"sloppytest"})

    def parse(self, data: bytes, file_name: str) -> ParsedDocument:
        from knora.domain.document import PageSpan

        return ParsedDocument(text="  padded\r\n", pages=[PageSpan(number=1, start=0, end=10)])


def test_parse_bytes_refuses_offsets_into_unnormalised_text() -> None:
    from knora.ports.parser import ParseError

    register(lambda _ctx: _Sloppy(), _Sloppy.extensions)
    try:
        with pytest.raises(ParseError, match="offsets"):
            parse_bytes(b"x", "a.sloppytest")
    finally:
        PARSERS.unregister("sloppytest")
