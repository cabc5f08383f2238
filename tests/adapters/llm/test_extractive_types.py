"""Question types (who/when/how many/where/what is, English and Chinese) and whether a sentence answers
one."""

from __future__ import annotations

import pytest

from knora.adapters.llm.extractive_types import QType, definition_subject, holds_answer, question_type

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(("query", "expected"), [
    ("Who founded the Apache foundation?", QType.PERSON), ("Which company makes it?", QType.PERSON),
    ("When was it released?", QType.TIME), ("In what year did it open?", QType.TIME),
    ("How many workers are there?", QType.NUMBER), ("How much does it cost?", QType.NUMBER),
    ("Where is the office?", QType.PLACE), ("In which city is it?", QType.PLACE),
    ("What is a knowledge base?", QType.DEFINITION), ("Define BM25", QType.DEFINITION),
    ("谁发明了电话？", QType.PERSON), ("长城是什么时候建的？", QType.TIME), ("有几个端口？", QType.NUMBER),
    ("年费是多少？", QType.NUMBER), ("公司总部在哪里？", QType.PLACE), ("知识库是什么？", QType.DEFINITION),
    ("什么是向量检索？", QType.DEFINITION),
    ("What is the name of the river?", None), ("Why does it fail?", None), ("他几乎没有来过", None),
])
def test_question_type(query: str, expected: QType | None) -> None:
    assert question_type(query) is expected


def test_definition_subject() -> None:
    assert definition_subject("What is a knowledge base?") == "knowledge base"
    assert definition_subject("What does RAG stand for?") == "rag"
    assert definition_subject("知识库是什么？") == "知识库"
    assert definition_subject("What is used for logging in the server?") is None


@pytest.mark.parametrize(("qtype", "query", "sentence", "expected"), [
    (QType.PERSON, "Who wrote socat?", "It was written by Gerhard Rieger.", True),
    (QType.PERSON, "Who wrote socat?", "It was written long ago.", False),
    (QType.PERSON, "Who wrote Socat?", "Socat is old.", False),  # the question's own name is no answer
    (QType.TIME, "When was it written?", "It was written in 2001.", True),
    (QType.TIME, "When does it open?", "It opens at 9 a.m. on Mondays.", True),
    (QType.TIME, "When was it written?", "It was written by hand.", False),
    (QType.NUMBER, "How many ports does it use?", "It uses two ports.", True),
    (QType.NUMBER, "How many of the 12 ports are open?", "Most of the 12 ports are closed.", False),
    (QType.PLACE, "Where is the office?", "The office is in Berlin.", True),
    (QType.PLACE, "Where is the office?", "The office is large.", False),
    (QType.DEFINITION, "What is a knowledge base?", "A knowledge base is a store of documents.", True),
    (QType.DEFINITION, "What is a knowledge base?", "Users add files to a knowledge base daily.", False),
    (QType.PERSON, "谁发明了电话？", "电话由贝尔发明。", True),
    (QType.TIME, "电话是哪一年发明的？", "电话于1876年发明。", True),
    (QType.NUMBER, "有几个端口？", "服务使用两个端口。", True),
    (QType.PLACE, "公司总部在哪里？", "公司总部位于上海。", True),
    (QType.DEFINITION, "什么是向量检索？", "向量检索是一种按语义查找文本的方法。", True),
    (QType.DEFINITION, "什么是向量检索？", "很多系统都支持向量检索。", False),
])
def test_holds_answer(qtype: QType, query: str, sentence: str, expected: bool) -> None:
    assert holds_answer(qtype, query, sentence) is expected
