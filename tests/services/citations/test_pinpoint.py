"""A citation of a merged passage names the source chunk holding the sentence it follows (issue #18)."""

from __future__ import annotations

import pytest

from knora.domain.search import ChunkSpan, SearchResult
from knora.services.citations.pinpoint import cited_sentence, pinpoint
from knora.services.citations.registry import ReferenceRegistry

pytestmark = pytest.mark.unit

DOC = "aaaaaaaa-0000-0000-0000-000000000001"
KB = "bbbbbbbb-0000-0000-0000-000000000001"
EN = ["The pump was designed in Oslo. It has a steel housing.",
      "The pump weighs 41 kilograms when empty. Its motor draws 2.2 kW.",
      "Service is due every 18 months. Filters are changed yearly."]
ZH = ["水泵由奥斯陆的团队设计。外壳为钢制。", "水泵空载重四十一公斤。电机功率为二点二千瓦。",
      "每十八个月需要保养一次。滤芯每年更换。"]


def merged(parts: list[str], pages: list[str] | None = None, sep: str = "\n\n") -> SearchResult:
    spans, pos = [], 0
    for n, p in enumerate(parts):
        spans.append(ChunkSpan(chunk_id=f"chunk-{n}", start=pos, end=pos + len(p), chunk_index=n,
                               location=pages[n] if pages else ""))
        pos += len(p) + len(sep)
    return SearchResult(id="chunk-0", content=sep.join(parts), knowledge_id=DOC,
                        knowledge_title="Pump manual", knowledge_base_id=KB, spans=spans)


def registry(r: SearchResult) -> ReferenceRegistry:
    refs = ReferenceRegistry()
    refs.register_search_results([r])
    return refs


def cited_ids(text: str) -> list[str]:
    return [part.split('"')[0] for part in text.split('chunk_id="')[1:]]


def test_the_sentence_before_a_mark_is_the_cited_one() -> None:
    assert cited_sentence("First claim. **Second** claim, here ") == "Second claim, here"
    assert cited_sentence('A. <kb doc="x" chunk_id="y" /> - B is true.') == "B is true."
    assert cited_sentence("第一句。第二句") == "第二句"
    assert cited_sentence("") == ""


@pytest.mark.parametrize(("parts", "answer", "want"), [
    (EN, 'It weighs little. The pump weighs 41 kilograms when empty. <ref id="c1"/>', ["chunk-1"]),
    (EN, 'Service is due every 18 months <ref id="c1"/>.', ["chunk-2"]),  # mark before the full stop
    # after the last sentence of a later chunk, at the very end of the answer
    (EN, 'Filters are changed yearly. <ref id="c1"/>', ["chunk-2"]),
    (EN, 'Designed in Oslo: The pump was designed in Oslo. <ref id="c1"/> Its motor draws 2.2 kW. '
         '<ref id="c1"/>', ["chunk-0", "chunk-1"]),
    (ZH, '水泵空载重四十一公斤。<ref id="c1"/>此外，滤芯每年更换。<ref id="c1"/>', ["chunk-1", "chunk-2"]),
    (ZH, "滤芯每年\n更换。<ref id=\"c1\"/>", ["chunk-2"]),  # a quote that joined two lines
])
def test_a_mark_names_the_chunk_of_its_sentence(parts: list[str], answer: str, want: list[str]) -> None:
    refs = registry(merged(parts))
    assert cited_ids(refs.decode_output(answer)) == want


def test_a_paraphrase_is_matched_to_the_most_alike_sentence() -> None:
    refs = registry(merged(EN))
    text = refs.decode_output('Also, servicing is needed every 18 months <ref id="c1"/>.')
    assert cited_ids(text) == ["chunk-2"]


def test_a_claim_found_nowhere_keeps_naming_the_passage() -> None:
    refs = registry(merged(EN))
    assert cited_ids(refs.decode_output('Completely unrelated words <ref id="c1"/>')) == ["chunk-0"]
    assert cited_ids(refs.decode_output('<ref id="c1"/>')) == ["chunk-0"]


def test_the_tag_carries_the_cited_chunks_page() -> None:
    refs = registry(merged(EN, pages=["p. 1", "p. 2", "p. 3"]))
    out = refs.decode_output('Service is due every 18 months. <ref id="c1"/>')
    assert out == ('Service is due every 18 months. <kb doc="Pump manual" chunk_id="chunk-2" '
                   f'kb_id="{KB}" page="p. 3" />')


def test_a_sentence_in_two_overlapping_chunks_names_the_first_that_holds_it_whole() -> None:
    text = "Alpha one. Beta two. Gamma three."
    spans = [ChunkSpan(chunk_id="a", start=0, end=20), ChunkSpan(chunk_id="b", start=11, end=len(text))]
    point = pinpoint(text, spans, "Beta two. ")
    assert point is not None
    assert point.span.chunk_id == "a"
    assert text[point.quote_start:point.quote_end] == "Beta two."
    point = pinpoint(text, spans, "Gamma three.")
    assert point is not None
    assert point.span.chunk_id == "b"
    assert text[11 + point.quote_start:11 + point.quote_end] == "Gamma three."


def test_streaming_names_the_same_chunks_at_every_split() -> None:
    refs = registry(merged(EN))
    answer = ('The pump weighs 41 kilograms when empty. <ref id="c1"/> Filters are changed yearly. '
              '<ref id="c1"/>')
    whole = refs.decode_output(answer)
    assert cited_ids(whole) == ["chunk-1", "chunk-2"]
    for cut in range(len(answer) + 1):
        dec = refs.stream_decoder()
        assert dec.feed(answer[:cut]) + dec.feed(answer[cut:]) + dec.flush() == whole, cut


def test_an_unmerged_passage_is_cited_exactly_as_before() -> None:
    r = SearchResult(id="solo", content="The pump weighs 41 kilograms.", knowledge_id=DOC,
                     knowledge_base_id=KB, knowledge_title="Pump manual")
    out = registry(r).decode_output('The pump weighs 41 kilograms. <ref id="c1"/>')
    assert out == f'The pump weighs 41 kilograms. <kb doc="Pump manual" chunk_id="solo" kb_id="{KB}" />'
