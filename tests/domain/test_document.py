from __future__ import annotations

import pytest

from knora.domain.document import PageSpan, chunk_location, location_text, span_at

pytestmark = pytest.mark.unit

SPANS = [PageSpan(number=1, start=0, end=10), PageSpan(number=2, start=12, end=30),
         PageSpan(number=3, start=32, end=40)]


def test_span_at_finds_the_page_and_the_one_before_a_separator() -> None:
    assert span_at(SPANS, 0) is SPANS[0]
    assert span_at(SPANS, 11) is SPANS[0]  # the blank line between pages 1 and 2
    assert span_at(SPANS, 12) is SPANS[1]
    assert span_at(SPANS, 39) is SPANS[2]
    assert span_at([], 5) is None
    assert span_at([PageSpan(number=4, start=5, end=9)], 2) is None


def test_chunk_location_names_first_and_last_page() -> None:
    assert chunk_location(SPANS, 2, 8) == {"page": 1, "page_kind": "page"}
    assert chunk_location(SPANS, 5, 20) == {"page": 1, "page_kind": "page", "page_end": 2}
    assert chunk_location(SPANS, 12, 30) == {"page": 2, "page_kind": "page"}  # end is exclusive
    assert chunk_location([], 0, 10) == {}


def test_location_text_for_people() -> None:
    assert location_text({"page": 3, "page_kind": "page"}) == "p. 3"
    assert location_text({"page": 3, "page_end": 4, "page_kind": "page"}) == "pp. 3–4"
    assert location_text({"page": 2, "page_kind": "slide"}) == "slide 2"
    assert location_text({"page": 1, "page_kind": "sheet", "page_label": "Budget"}) == "sheet Budget"
    assert location_text({}) == ""
    assert PageSpan(number=12, start=0, end=1).display() == "p. 12"
    attachment = PageSpan(number=2, start=0, end=1, kind="attachment", label="a.pdf")
    assert attachment.display() == "attachment a.pdf"


def test_same_location() -> None:
    from knora.domain.document import same_location

    p2 = {"page": 2, "page_kind": "page"}
    assert same_location(p2, dict(p2))
    assert not same_location(p2, {"page": 3, "page_kind": "page"})
    assert not same_location(p2, {"page": 2, "page_kind": "slide"})
    assert not same_location({"page": 1, "page_kind": "sheet", "page_label": "A"},
                             {"page": 1, "page_kind": "sheet", "page_label": "B"})
    assert same_location({}, p2)  # a document without pages is one place
