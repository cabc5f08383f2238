"""The extractive answerer's marks on a merged passage: one after each sentence when no one chunk holds the
quote."""

from __future__ import annotations

import pytest

from knora.adapters.llm.extractive import Passage, Pick, cite_quote, parse_chunk_spans

pytestmark = pytest.mark.unit

TEXT = "The tower is in Paris. It is made of iron.\n\nIt was completed in 1889. It is 330 m tall."
SPANS = ((0, 42), (44, len(TEXT)))


def pick(sentence: str) -> Pick:
    return Pick(sentence=sentence, handle="c2", score=1.0, order=(0, 0, 2))


def test_spans_are_parsed_and_bad_parts_skipped() -> None:
    assert parse_chunk_spans("0-42,44-90") == ((0, 42), (44, 90))
    assert parse_chunk_spans("") == ()
    assert parse_chunk_spans("x-1,3-,5-9") == ((5, 9),)


def test_a_quote_across_two_chunks_gets_a_mark_after_each_sentence() -> None:
    p = Passage("c2", TEXT, 0, SPANS)
    assert cite_quote(pick("It is made of iron. It was completed in 1889."), p) == (
        'It is made of iron. <ref id="c2"/> It was completed in 1889. <ref id="c2"/>')


def test_a_quote_inside_one_chunk_keeps_one_mark() -> None:
    p = Passage("c2", TEXT, 0, SPANS)
    assert cite_quote(pick("It was completed in 1889. It is 330 m tall."), p) == (
        'It was completed in 1889. It is 330 m tall. <ref id="c2"/>')
    assert cite_quote(pick("The tower is in Paris. It is made of iron."), Passage("c2", TEXT, 0)) == (
        'The tower is in Paris. It is made of iron. <ref id="c2"/>')


def test_chinese_quote_across_chunks_is_marked_without_spaces() -> None:
    text = "铁塔位于巴黎。塔身为铁制。\n\n铁塔于1889年建成。"
    p = Passage("c1", text, 0, ((0, 13), (15, len(text))))
    quote = Pick(sentence="塔身为铁制。铁塔于1889年建成。", handle="c1", score=1.0, order=(0, 1, 2))
    got = cite_quote(quote, p)
    assert got == '塔身为铁制。 <ref id="c1"/>铁塔于1889年建成。 <ref id="c1"/>'
