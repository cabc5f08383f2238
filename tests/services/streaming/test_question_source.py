"""Turns Knora starts for itself (``knora ask``, its MCP server's ``ask``) make ``api`` sessions, which
WeKnora's web UI sidebar (``source=web``) does not list (issue 13 item 10)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import pytest

from knora.root import Services
from knora.services.streaming.question import Question, collect_answer, start_question
from knora.settings import Settings
from tests.conftest import started

pytestmark = pytest.mark.integration


@pytest.fixture
async def c(make_settings: Callable[..., Settings]) -> AsyncIterator[Services]:
    async with started(make_settings()) as services:
        yield services


async def test_a_new_question_makes_an_api_session(c: Services) -> None:
    turn = await start_question(c.session_service, c.chat_service, c.default_tenant_id,
                                Question(query="hello there", knowledge_base_ids=[]))
    await collect_answer(c.stream_log, turn)
    session = await c.session_service.get(c.default_tenant_id, turn.session_id)
    assert session.source == "api"
    web, total = await c.session_service.list_sessions(c.default_tenant_id, page=1, page_size=30,
                                                       source="web")
    assert (web, total) == ([], 0)
