"""Session service: history for the next turn (spec §2.1), titles with and without a generative model."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from datetime import timedelta
from typing import Any

import pytest

from knora.domain.common import utcnow
from knora.domain.conversation import Message
from knora.ports.chat import ChatChunk, ChatMessage, ChatOptions, ChatResponse
from knora.services.sessions.service import fallback_title, sanitize_title
from knora.settings import Settings

pytestmark = pytest.mark.integration


@pytest.fixture
async def svc(make_settings: Callable[..., Settings]) -> AsyncIterator[Any]:
    from tests.conftest import started

    async with started(make_settings()) as c:
        yield c.session_service


async def turn(svc: Any, sid: str, i: int, query: str, answer: str, *, minutes_ago: int) -> None:
    at = utcnow() - timedelta(minutes=minutes_ago)
    await svc.messages.create_pair(
        Message(session_id=sid, tenant_id=1, request_id=f"r{i}", role="user", content=query, created_at=at),
        Message(session_id=sid, tenant_id=1, request_id=f"r{i}", role="assistant", content=answer,
                knowledge_references=[{"id": f"k{i}"}], created_at=at))


class TestHistory:
    async def test_pairs_by_request_and_keeps_latest_rounds(self, svc: Any) -> None:
        s = await svc.create(1)
        for i in range(7):
            await turn(svc, s.id, i, f"q{i}", f"<think>hidden</think>a{i}", minutes_ago=60 - i)
        await turn(svc, s.id, 7, "stopped with nothing", "", minutes_ago=2)
        await turn(svc, s.id, 8, "current", "", minutes_ago=1)
        hist = await svc.history(s.id, max_rounds=3, exclude_request_id="r8")
        assert [(h.query, h.answer) for h in hist] == [("q4", "a4"), ("q5", "a5"), ("q6", "a6")]
        assert hist[0].references == [{"id": "k4"}]
        assert await svc.history(s.id, max_rounds=0) == []

    async def test_image_captions_join_the_query(self, svc: Any) -> None:
        s = await svc.create(1)
        at = utcnow()
        await svc.messages.create_pair(
            Message(session_id=s.id, tenant_id=1, request_id="r", role="user", content="what is this",
                    images=[{"url": "u", "caption": "a red cat"}], created_at=at),
            Message(session_id=s.id, tenant_id=1, request_id="r", role="assistant", content="a cat",
                    created_at=at))
        (h,) = await svc.history(s.id)
        assert h.query.endswith("[用户上传图片内容]\na red cat")


class _TitleModel:
    model_id = "fake:title"
    supports_tools = False

    def __init__(self, reply: str) -> None:
        self.reply = reply
        self.seen: list[Sequence[ChatMessage]] = []

    async def chat(self, messages: Sequence[ChatMessage], options: ChatOptions | None = None) -> ChatResponse:
        self.seen.append(messages)
        return ChatResponse(content=self.reply)

    async def stream(self, messages: Sequence[ChatMessage],
                     options: ChatOptions | None = None) -> AsyncIterator[ChatChunk]:
        yield ChatChunk(content=self.reply)


class TestTitles:
    async def test_model_title_is_sanitised_and_saved_once(self, svc: Any) -> None:
        model = _TitleModel('<think>\n\n</think>  "Refund policy for annual plans"\nextra')

        async def get(model_id: str | None, tenant_id: int) -> Any:
            return model

        svc._chat_model = get
        s = await svc.create(1)
        assert await svc.generate_title(1, s.id,
                                        "what is the refund policy?") == "Refund policy for annual plans"
        assert model.seen[0][1].content == "what is the refund policy?"
        assert await svc.generate_title(1, s.id, "another question") == "Refund policy for annual plans"
        assert (await svc.get(1, s.id)).title == "Refund policy for annual plans"

    async def test_extractive_answerer_means_truncated_query(self, svc: Any) -> None:
        model = _TitleModel("Should not be used")
        model.model_id = "local:extractive"

        async def get(model_id: str | None, tenant_id: int) -> Any:
            return model

        svc._chat_model = get
        s = await svc.create(1)
        assert await svc.generate_title(1, s.id, "short question") == "short question"
        assert model.seen == []

    async def test_failing_model_falls_back(self, svc: Any) -> None:
        async def get(model_id: str | None, tenant_id: int) -> Any:
            raise RuntimeError("no model")

        svc._chat_model = get
        s = await svc.create(1)
        assert await svc.generate_title(1, s.id, "q " * 40) == fallback_title("q " * 40)


@pytest.mark.unit
def test_title_helpers() -> None:
    assert fallback_title("  a   b  ") == "a b"
    long = "How do I configure the retrieval thresholds for hybrid search in Knora"
    t = fallback_title(long)
    assert t.endswith("…")
    assert len(t) <= 31
    assert long.startswith(t[:-1])
    assert sanitize_title("x" * 300) == "x" * 100
    assert sanitize_title("《标题》") == "标题"
