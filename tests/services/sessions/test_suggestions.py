"""Follow-up suggestions: from the passages an answer used when there is no generative model, from the model
when there is one (and back to the passages when it fails), stored with the message."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from knora.domain.conversation import Message
from knora.ports.chat import ChatModel, ModelError
from knora.root import Services
from knora.services.sessions.suggestions import SuggestionService, from_sources, parse_model_lines
from knora.settings import Settings
from tests.conftest import started
from tests.fakes.function_model import FunctionModel, script

TEA = [{"knowledge_title": "Tea guide", "knowledge_base_id": "kb1",
        "content": "# Tea guide\n\nGreen tea is steamed soon after picking.\n\n## Brewing "
                   "temperature\n\nBrew green tea at 80 degrees."},
       {"knowledge_title": "Tea guide", "knowledge_base_id": "kb1",
        "content": "## Storage\n\nKeep oolong sealed, cool and away from light. Oolong keeps for a year."},
       {"knowledge_title": "Oolong notes", "knowledge_base_id": "kb2",
        "content": "Oolong is half oxidised. Tieguanyin is an oolong from Anxi."}]


class TestFromSources:
    def test_sections_documents_and_terms_the_question_did_not_name(self) -> None:
        got = from_sources("How should I store green tea?", "Keep it sealed.", TEA)
        texts = [q["text"] for q in got]
        assert texts[0] == "What does Tea guide say about Brewing temperature?"
        assert "What does Tea guide say about Storage?" not in texts  # asked already ("store")
        assert "What else does Oolong notes cover?" in texts
        assert len(texts) == 3
        assert len(set(texts)) == 3
        assert {q["kb"] for q in got} <= {"kb1", "kb2"}

    def test_the_question_language_is_kept(self) -> None:
        refs = [{"knowledge_title": "茶叶指南", "knowledge_base_id": "k",
                 "content": "## 冲泡温度\n\n绿茶用八十度的水冲泡。"}]
        got = from_sources("绿茶怎么保存？", "密封。", refs)
        assert got[0]["text"] == "茶叶指南中关于“冲泡温度”的内容是什么？"

    def test_terms_are_phrased_as_written(self) -> None:
        refs = [{"knowledge_title": "Ops", "knowledge_base_id": "k",
                 "content": "Taints repel pods. Taints mark nodes, and tolerations let pods run on tainted "
                            "nodes; tolerations match taints."}]
        texts = [q["text"] for q in from_sources("How are pods scheduled?", "By the scheduler.", refs)]
        assert "What are taints?" in texts
        assert "What are tolerations?" in texts

    def test_no_sources_no_questions(self) -> None:
        assert from_sources("hello", "hi", []) == []


def test_model_lines_lose_their_numbering() -> None:
    text = "<think>x</think>1. What is oolong?\n- How long does tea keep?\n\n3) Why seal it?\n4. One more?"
    assert parse_model_lines(text) == ["What is oolong?", "How long does tea keep?", "Why seal it?"]


@pytest.fixture
async def c(make_settings: Callable[..., Settings]) -> AsyncIterator[Services]:
    async with started(make_settings()) as services:
        yield services


async def _turn(c: Services, refs: list[dict[str, Any]], *, completed: bool = True) -> Message:
    s = await c.session_service.create(c.default_tenant_id)
    tid = c.default_tenant_id
    user = Message(session_id=s.id, tenant_id=tid, request_id="r1", role="user",
                   content="How do I store tea?")
    bot = Message(session_id=s.id, tenant_id=tid, request_id="r1", role="assistant", content="Sealed.",
                  knowledge_references=refs, is_completed=completed, model_id="m1")
    await c.session_service.messages.create_pair(user, bot)
    return bot


def _getter(model: ChatModel | None) -> Any:
    calls: list[tuple[str | None, int]] = []

    async def get(model_id: str | None, tenant_id: int) -> ChatModel | None:
        calls.append((model_id, tenant_id))
        return model

    get.calls = calls  # type: ignore[attr-defined]
    return get


class TestSuggestionService:
    async def test_the_model_writes_them_from_the_turn(self, c: Services) -> None:
        model = script("How long does oolong keep?\nWhat temperature suits green tea?")
        getter = _getter(model)
        svc = SuggestionService(c.session_service, getter)
        bot = await _turn(c, TEA)
        got = await svc.ensure(c.default_tenant_id, bot.session_id, bot.id)
        assert [q["text"] for q in got["questions"]] == ["How long does oolong keep?",
                                                        "What temperature suits green tea?"]
        assert all(q["source"] == "model" for q in got["questions"])
        assert getter.calls == [("m1", c.default_tenant_id)]  # the model that answered the turn
        sent = model.requests[0].messages[-1].content
        assert "How do I store tea?" in sent
        assert "Sealed." in sent
        assert "Oolong notes" in sent
        # kept with the message: no second model call
        assert (await svc.get(c.default_tenant_id, bot.session_id, bot.id))["id"] == got["id"]
        stored = await c.session_service.get_message(c.default_tenant_id, bot.id)
        assert stored is not None
        assert stored.debug["suggestions"]["id"] == got["id"]

    async def test_a_failing_model_falls_back_to_the_sources(self, c: Services) -> None:
        def boom(_m: Any, _t: Any) -> str:
            raise ModelError("down")

        svc = SuggestionService(c.session_service, _getter(FunctionModel(boom)))
        bot = await _turn(c, TEA)
        got = await svc.ensure(c.default_tenant_id, bot.session_id, bot.id)
        assert got["status"] == "ready"
        assert got["questions"]
        assert all(q["source"] == "document" for q in got["questions"])

    async def test_an_unfinished_answer_is_still_generating(self, c: Services) -> None:
        svc = SuggestionService(c.session_service, _getter(None))
        bot = await _turn(c, TEA, completed=False)
        got = await svc.get(c.default_tenant_id, bot.session_id, bot.id)
        assert got["status"] == "generating"
        assert got["questions"] == []
        assert got["allow_regenerate"] is False
