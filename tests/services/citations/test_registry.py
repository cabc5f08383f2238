"""The per-turn reference registry and its streaming decoder (spec §4)."""

from __future__ import annotations

import itertools

import pytest

from knora.domain.search import SearchResult
from knora.ports.turn import ReferenceRegistryPort
from knora.services.citations.registry import ReferenceRegistry

pytestmark = pytest.mark.unit

CHUNK_A = "11111111-1111-1111-1111-111111111111"
CHUNK_B = "22222222-2222-2222-2222-222222222222"
DOC_A = "aaaaaaaa-0000-0000-0000-000000000001"
DOC_B = "aaaaaaaa-0000-0000-0000-000000000002"
KB = "bbbbbbbb-0000-0000-0000-000000000001"


def _results() -> list[SearchResult]:
    return [
        SearchResult(id=CHUNK_A, content="alpha", knowledge_id=DOC_A, knowledge_title="Guide <A>",
                     knowledge_base_id=KB),
        SearchResult(id=CHUNK_B, content="beta", knowledge_id=DOC_B, knowledge_filename="b.md",
                     knowledge_base_id=KB),
        SearchResult(id=CHUNK_A, content="alpha again", knowledge_id=DOC_A, knowledge_base_id=KB),
    ]


@pytest.fixture
def reg() -> ReferenceRegistry:
    r = ReferenceRegistry()
    r.register_search_results(_results())
    r.register_web("https://example.com/page#frag", "Example")
    return r


TAG_A = f'<kb doc="Guide &lt;A&gt;" chunk_id="{CHUNK_A}" kb_id="{KB}" />'
TAG_B = f'<kb doc="b.md" chunk_id="{CHUNK_B}" kb_id="{KB}" />'
TAG_W = '<web url="https://example.com/page#frag" title="Example" />'

SAMPLE = (
    'Alpha is first<ref id="c1"/> and beta second <REF id = "C2" />. See the web<ref id="w1"/>.\n'
    'Unknown<ref id="c9"/> doc<ref id="d1"/> bad<ref foo="c1"/> fake <kb doc="x" chunk_id="y"/> '
    'and <web url="http://evil"/> gone; a < b and <b>bold</b>, x<refs> stays, <k and <w too. '
    'res://0042 orphan, resources fine. Tail<ref id="c1"'
)
EXPECTED = (
    f"Alpha is first{TAG_A} and beta second {TAG_B}. See the web{TAG_W}.\n"
    "Unknown doc bad fake  "
    "and  gone; a < b and <b>bold</b>, x<refs> stays, <k and <w too. "
    " orphan, resources fine. Tail"
)


class TestHandles:
    def test_satisfies_port(self, reg: ReferenceRegistry) -> None:
        assert isinstance(reg, ReferenceRegistryPort)

    def test_allocation_follows_result_order_and_dedupes(self, reg: ReferenceRegistry) -> None:
        assert reg.chunk_handle(CHUNK_A) == "c1"
        assert reg.chunk_handle(CHUNK_B) == "c2"
        assert reg.document_handle(DOC_A) == "d1"
        assert reg.document_handle(DOC_B) == "d2"
        assert reg.kb_handle(KB) == "b1"
        assert reg.register_web("HTTPS://EXAMPLE.com/page") == "w1"  # canonical URL dedupe
        assert reg.register_web("https://other.org/") == "w2"

    def test_resolve_any_case(self, reg: ReferenceRegistry) -> None:
        assert reg.resolve("C1") == {"kind": "chunk", "id": CHUNK_A, "knowledge_id": DOC_A, "kb_id": KB,
                                     "title": "Guide <A>", "chunk_index": 0, "chunk_type": "text"}
        assert reg.resolve("w1") == {"kind": "web", "url": "https://example.com/page#frag",
                                     "title": "Example"}
        assert reg.resolve("c7") is None
        assert reg.resolve("zz") is None

    def test_handle_shaped_value_is_never_a_new_id(self) -> None:
        r = ReferenceRegistry()
        assert r.register_chunk("c5") is None
        assert r.register_chunk(CHUNK_A) == "c1"
        assert r.register_chunk("C1") == "c1"

    def test_metadata_merges_missing_fields(self) -> None:
        r = ReferenceRegistry()
        r.register_chunk(CHUNK_A)
        r.register_chunk(CHUNK_A, title="Later title")
        assert r.resolve("c1")["title"] == "Later title"  # type: ignore[index]

    def test_protocol_prompt_follows_flag(self) -> None:
        on, off = ReferenceRegistry(True).protocol_prompt(), ReferenceRegistry(False).protocol_prompt()
        assert '<ref id="cN"/>' in on
        assert "Do not write <ref>" not in on
        assert "Do not write <ref>" in off
        assert "res://NNNN" in off


class TestExpansion:
    def test_expand_text(self, reg: ReferenceRegistry) -> None:
        assert reg.decode_output(SAMPLE) == EXPECTED

    def test_expand_text_without_resources_keeps_orphans(self, reg: ReferenceRegistry) -> None:
        assert reg.expand_text('x<ref id="c2"/> <kb a="1">y') == f"x{TAG_B} y"

    def test_citations_disabled_deletes_refs(self) -> None:
        r = ReferenceRegistry(citations_enabled=False)
        r.register_search_results(_results())
        assert r.expand_text('a<ref id="c1"/>b<kb x="1"/>c') == "abc"

    @pytest.mark.parametrize("cut", range(len(SAMPLE) + 1))
    def test_stream_matches_whole_text_at_every_split(self, reg: ReferenceRegistry, cut: int) -> None:
        dec = reg.stream_decoder()
        out = dec.feed(SAMPLE[:cut]) + dec.feed(SAMPLE[cut:]) + dec.flush()
        assert out == EXPECTED

    def test_stream_one_character_at_a_time(self, reg: ReferenceRegistry) -> None:
        dec = reg.stream_decoder()
        pieces = [dec.feed(ch) for ch in SAMPLE]
        assert "".join(pieces) + dec.flush() == EXPECTED
        # Nothing of a tag is ever released half-way: no piece contains a partial public tag or raw ref.
        assert not any("<ref " in p or "<REF " in p or "<kb doc=\"x" in p for p in pieces)

    def test_stream_three_way_splits(self, reg: ReferenceRegistry) -> None:
        text = 'A<ref id="c1"/>b<web x>c res://00'
        want = reg.decode_output(text)
        for i, j in itertools.combinations(range(len(text) + 1), 2):
            dec = reg.stream_decoder()
            got = dec.feed(text[:i]) + dec.feed(text[i:j]) + dec.feed(text[j:]) + dec.flush()
            assert got == want, (i, j)

    def test_flush_discards_partial_tag_and_releases_prose(self, reg: ReferenceRegistry) -> None:
        dec = reg.stream_decoder()
        assert dec.feed("Done <re") == "Done "
        assert dec.flush() == "<re"
        dec2 = reg.stream_decoder()
        assert dec2.feed('Done <ref id="c') == "Done "
        assert dec2.flush() == ""

    def test_resource_handles_decode_in_stream(self) -> None:
        r = ReferenceRegistry()
        encoded = r.encode_text("see local://bucket/img.png and summary/"
                                "12345678-1234-1234-1234-123456789abc")
        assert encoded == "see res://0001 and res://0002"
        dec = r.stream_decoder()
        out = dec.feed("![i](res://00") + dec.feed("01) res://0009 ok") + dec.flush()
        assert out == "![i](local://bucket/img.png)  ok"


class TestHistoryAndArguments:
    def test_compact_public_citations_reregisters(self) -> None:
        r = ReferenceRegistry()
        text = f'Claim{TAG_B} and {TAG_W} and <kb doc="no id"/>'
        assert r.compact_public_citations(text) == ('Claim<ref id="c1"/> and <ref id="w1"/> and '
                                                    '<kb doc="no id"/>')
        assert r.resolve("c1")["id"] == CHUNK_B  # type: ignore[index]
        assert r.expand_text('x<ref id="c1"/>') == f'x<kb doc="b.md" chunk_id="{CHUNK_B}" kb_id="{KB}" />'

    def test_encode_and_decode_arguments_round_trip(self, reg: ReferenceRegistry) -> None:
        shown = reg.encode_text(f"chunk {CHUNK_A} of {DOC_A} in {KB}")
        assert shown == "chunk c1 of d1 in b1"
        args = '{"knowledge_base_ids":["b1"],"chunk_id":"C2","other":"c99","word":"abc1"}'
        assert reg.decode_arguments(args) == (
            f'{{"knowledge_base_ids":["{KB}"],"chunk_id":"{CHUNK_B}","other":"c99","word":"abc1"}}')


def test_a_chunk_with_a_page_is_cited_with_it_and_shown_to_the_model_with_it() -> None:
    from knora.services.citations.numbered import NumberedCitations
    from knora.services.pipeline.contexts import render_context

    scanned = SearchResult(id=CHUNK_B, content="The invoice total is 4,250 EUR.", knowledge_id=DOC_B,
                           knowledge_title="Contract", knowledge_base_id=KB,
                           chunk_metadata={"page": 12, "page_kind": "page"})
    slide = SearchResult(id=CHUNK_A, content="Notes: ship in May", knowledge_id=DOC_A,
                         knowledge_title="Roadmap", knowledge_base_id=KB,
                         chunk_metadata={"page": 3, "page_kind": "slide"})
    r = ReferenceRegistry()
    context = render_context([scanned, slide], r)
    assert 'location="p. 12"' in context.xml
    assert 'location="slide 3"' in context.xml
    handle = r.chunk_handle(CHUNK_B)
    assert handle is not None
    tag = r.public_tag(handle)
    assert tag == f'<kb doc="Contract" chunk_id="{CHUNK_B}" kb_id="{KB}" page="p. 12" />'
    numbered = NumberedCitations()
    assert numbered.render(f"Total {tag}.") == "Total [1]."
    assert numbered.footer() == "[1] Contract, p. 12"
    assert numbered.sources[CHUNK_B].page == "p. 12"
