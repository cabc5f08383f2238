"""The extractive answerer picks answering sentences, cites them, and says no generative model answered."""

from __future__ import annotations

import pytest

from knora.adapters.llm.extractive import (
    NO_MODEL_EN,
    NO_MODEL_ZH,
    ExtractiveAnswerer,
    _pieces,
    split_sentences,
)
from knora.ports.chat import ChatMessage, ChatOptions

pytestmark = pytest.mark.unit

PASSAGES = [
    {"handle": "c1",
     "content": "The Eiffel Tower is in Paris. It was completed in 1889 for the World's Fair."},
    {"handle": "c2",
     "content": "Paris has many museums. The Louvre is the most visited museum in the world."},
]


async def ask(query: str, passages: list[dict[str, str]] | None = None,
              messages: list[ChatMessage] | None = None
              ) -> str:
    model = ExtractiveAnswerer()
    opts = ChatOptions(extra={"query": query, **({"passages": passages} if passages is not None else {})})
    text = ""
    async for chunk in model.stream(messages or [ChatMessage(role="user", content=query)], opts):
        text += chunk.content
    return text


class TestExtractiveAnswerer:
    async def test_picks_the_answering_sentence_and_cites_it(self) -> None:
        answer = await ask("When was the Eiffel Tower completed?", PASSAGES)
        assert answer.startswith(NO_MODEL_EN)
        assert "It was completed in 1889 for the World's Fair." in answer
        assert '<ref id="c1"/>' in answer
        assert "Louvre" not in answer

    async def test_chinese(self) -> None:
        answer = await ask("长城总长度是多少？", [
            {"handle": "c1", "content": "明长城东起山海关，西至嘉峪关。长城总长度超过两万公里。"},
            {"handle": "c2", "content": "故宫位于北京。"}])
        assert answer.startswith(NO_MODEL_ZH)
        assert '长城总长度超过两万公里。 <ref id="c1"/>' in answer
        assert "故宫" not in answer

    async def test_reads_retrieval_xml_when_no_structured_passages(self) -> None:
        xml = ('<retrieval type="knowledge" mode="semantic"><document id="d1" title="T">'
               '<chunk id="c7" index="0" view="full" type="text"><content>Tea &amp; milk are mixed in '
               'Hong Kong style tea.</content></chunk></document></retrieval>')
        answer = await ask("What is mixed in Hong Kong style tea?",
                           messages=[ChatMessage(role="system", content=xml),
                                     ChatMessage(role="user", content="What is mixed?")])
        assert 'Tea & milk are mixed in Hong Kong style tea. <ref id="c7"/>' in answer

    async def test_nothing_relevant_says_so(self) -> None:
        answer = await ask("Who painted the Mona Lisa?", [{"handle": "c1", "content": "Bananas are yellow."}])
        assert "cannot answer" in answer
        assert "<ref" not in answer

    def test_deltas_never_split_a_ref(self) -> None:
        text = 'A long sentence here <ref id="c12"/> and more text'
        pieces = _pieces(text, 5)
        assert "".join(pieces) == text
        assert '<ref id="c12"/>' in pieces
        assert all(p == '<ref id="c12"/>' for p in pieces if "<" in p)

    async def test_session_title_purpose(self) -> None:
        resp = await ExtractiveAnswerer().chat([ChatMessage(role="user",
                                                            content="How do  solar panels work?")],
                                               ChatOptions(extra={"purpose": "session_title"}))
        assert resp.content == "How do solar panels work?"


def test_markdown_table_rows_are_sentences_that_carry_their_header() -> None:
    text = ("Shortfalls by site.\n\n| Warehouse | Shortfall |\n| --- | --- |\n| Leeds | 41 pallets |\n"
            "| Turin | 7 \\| 8 |\n\nAfter the table.")
    assert split_sentences(text) == ["Shortfalls by site.", "Warehouse: Leeds, Shortfall: 41 pallets",
                                     "Warehouse: Turin, Shortfall: 7 | 8", "After the table."]
    no_separator = "| not | a table |\n| no | separator |"
    assert split_sentences(no_separator) == ["| not | a table |", "| no | separator |"]
