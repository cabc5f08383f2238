"""Public citation tags → numbered marks and a sources list, whole or fed in any split."""

from __future__ import annotations

import pytest

from knora.services.citations.numbered import NumberedCitations

pytestmark = pytest.mark.unit

KB_1 = '<kb doc="Tea &amp; culture" chunk_id="c-1" kb_id="kb-1" />'
KB_2 = '<kb doc="Solar" chunk_id="c-2" />'
WEB = '<web url="https://example.org/a?b=1&amp;c=2" title="Example" />'
TEXT = f"Oolong is partly oxidised{KB_1}. Panels make 400 W{KB_2}{WEB}; again{KB_1}. Keep <b> and a < b."
RENDERED = "Oolong is partly oxidised[1]. Panels make 400 W[2][3]; again[1]. Keep <b> and a < b."


class TestNumberedCitations:
    def test_marks_in_order_of_first_citation_and_lists_the_sources(self) -> None:
        n = NumberedCitations()
        assert n.render(TEXT) == RENDERED
        assert [(s.number, s.kind, s.title, s.url, s.chunk_id) for s in n.sources.values()] == [
            (1, "kb", "Tea & culture", "", "c-1"), (2, "kb", "Solar", "", "c-2"),
            (3, "web", "Example", "https://example.org/a?b=1&c=2", "")]
        first = next(iter(n.sources.values()))
        assert first.knowledge_base_id == "kb-1"
        assert [s.label for s in n.sources.values()] == ["Tea & culture", "Solar",
                                                         "Example <https://example.org/a?b=1&c=2>"]
        assert n.footer().splitlines()[2] == "[3] Example <https://example.org/a?b=1&c=2>"

    def test_every_split_gives_the_whole_text_result(self) -> None:
        for cut in range(len(TEXT) + 1):
            n = NumberedCitations()
            out = n.feed(TEXT[:cut]) + n.feed(TEXT[cut:]) + n.flush()
            assert out == RENDERED, cut

    def test_a_partial_tag_is_never_released_half(self) -> None:
        n = NumberedCitations()
        first = n.feed("Answer<kb doc=\"Solar\" chu")
        assert first == "Answer"
        assert n.feed('nk_id="c-2" /> done') == "[1] done"

    def test_channels_hold_their_own_tails_and_share_numbers(self) -> None:
        n = NumberedCitations()
        assert n.feed("think <kb doc", "thinking") == "think "
        assert n.feed(f"answer {KB_2}") == "answer [1]"
        assert n.feed('="Tea" chunk_id="c-1" />', "thinking") == "[2]"
        assert n.flush("thinking") == ""
        assert n.flush() == ""

    def test_a_lone_angle_bracket_is_released_at_the_end(self) -> None:
        n = NumberedCitations()
        assert n.feed("x <") == "x "
        assert n.flush() == "<"
