"""The extractive answerer picks answering sentences, cites them, and says no generative model answered."""

from __future__ import annotations

import pytest

from knora.adapters.llm.extractive import (
    NO_ANSWER_EN,
    NO_ANSWER_ZH,
    NO_MODEL_EN,
    NO_MODEL_ZH,
    NOTHING_EN,
    ExtractiveAnswerer,
    Passage,
    _pieces,
    compose_answer,
    rank_sentences,
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

    async def test_nothing_relevant_says_the_documents_do_not_answer(self) -> None:
        answer = await ask("Who painted the Mona Lisa?", [{"handle": "c1", "content": "Bananas are yellow."}])
        assert answer == NO_ANSWER_EN
        assert "<ref" not in answer

    async def test_no_passages_at_all(self) -> None:
        assert await ask("Who painted the Mona Lisa?", []) == NOTHING_EN

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


def quoted(query: str, *contents: str, max_sentences: int = 2) -> list[str]:
    """The quoted sentences of the answer, without the note and the citation marks."""
    passages = [Passage(f"c{i + 1}", c, i) for i, c in enumerate(contents)]
    answer = compose_answer(query, passages, max_sentences)
    return [line.rsplit(" <ref", 1)[0] for line in answer.split("\n\n")[1:]]


class TestWholeSentences:
    def test_headings_running_headers_and_fragments_are_never_quoted(self) -> None:
        page_3 = ("Foo Server Handbook\n3\n## Ports\n\nthe port is reused after a restart. Foo listens on "
                  "port 8080 by default. To change the port you have to")
        page_4 = "Foo Server Handbook\n4\nThe port can be changed with the --port option.\n\nPage 4"
        got = quoted("Which port does Foo listen on by default?", page_3, page_4)
        assert got[0] == "Foo listens on port 8080 by default."
        joined = " ".join(got)
        for never in ("Handbook", "## Ports", "you have to", "the port is reused"):
            assert never not in joined

    def test_a_sentence_with_an_abbreviation_is_quoted_whole(self) -> None:
        got = quoted("Who maintains socat?", "Socat is maintained by Dr. Gerhard Rieger, e.g. on the U.S. "
                     "mirror. Its version is 1.7.4.", max_sentences=1)
        assert got == ["Socat is maintained by Dr. Gerhard Rieger, e.g. on the U.S. mirror."]

    def test_the_span_points_at_the_quoted_text_in_the_passage(self) -> None:
        content = "# Ports\n\nFoo listens on port\n8080 by default. It logs to syslog."
        best = rank_sentences("Which port does Foo listen on?", [Passage("c1", content, 0)])[0]
        assert best.sentence == "Foo listens on port 8080 by default."
        assert content[best.span[0]:best.span[1]] == "Foo listens on port\n8080 by default."


class TestQuestionTypes:
    @pytest.mark.parametrize(("query", "expected"), [
        ("When was the bridge opened?", "The bridge was opened in 1932."),
        ("Who opened the bridge?", "The bridge was opened by Mayor Johnson."),
        ("How many lanes does the bridge have?", "The bridge has four lanes."),
        ("Where is the bridge?", "The bridge is in Sydney."),
        ("What is the bridge?", "The bridge is a steel arch across the harbour."),
    ])
    def test_the_sentence_of_the_asked_type_wins(self, query: str, expected: str) -> None:
        passage = ("The bridge was opened by Mayor Johnson. The bridge has four lanes. The bridge was "
                   "opened in 1932. Many people walk over the bridge. The bridge is in Sydney. The bridge is "
                   "a steel arch across the harbour.")
        assert quoted(query, passage, max_sentences=1) == [expected]

    @pytest.mark.parametrize(("query", "expected"), [
        ("大桥是哪一年通车的？", "大桥于1932年通车。"),
        ("大桥有几条车道？", "大桥共有四条车道。"),
        ("谁主持了大桥通车仪式？", "大桥通车仪式由市长约翰逊主持。"),
        ("什么是大桥？", "大桥是一座横跨港湾的钢拱桥。"),
    ])
    def test_chinese(self, query: str, expected: str) -> None:
        passage = ("大桥通车仪式由市长约翰逊主持。大桥共有四条车道。大桥于1932年通车。很多人步行经过大桥。"
                   "大桥是一座横跨港湾的钢拱桥。")
        assert quoted(query, passage, max_sentences=1) == [expected]

    def test_chinese_nothing_answers(self) -> None:
        answer = compose_answer("如何烤面包？", [Passage("c1", "默认端口是8080。修改后需要重启服务。", 0)])
        assert answer == NO_ANSWER_ZH
