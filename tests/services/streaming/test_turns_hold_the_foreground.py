"""A chat turn holds the foreground from its intake to its end (ingestion's bulk loops step aside meanwhile);
a turn refused at intake, a finished turn and an unsaved turn leave nothing held."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest

from knora.domain.errors import NotFound
from knora.pacing import FOREGROUND
from knora.services.streaming.intake import ChatBody
from knora.settings import Settings
from tests.conftest import started

pytestmark = pytest.mark.integration


async def test_a_turn_holds_the_foreground_until_it_ends(make_settings: Callable[..., Settings]) -> None:
    async with started(make_settings()) as c:
        assert not FOREGROUND.busy
        s = await c.session_service.create(c.default_tenant_id)
        await c.chat_service.start(c.default_tenant_id, s.id, ChatBody(query="what is knora?"),
                                   str(uuid.uuid4()))
        assert FOREGROUND.busy  # started, not finished: nothing has run the turn's task yet
        await c.chat_service.wait_idle()
        assert not FOREGROUND.busy
        with pytest.raises(NotFound):
            await c.chat_service.start(c.default_tenant_id, str(uuid.uuid4()), ChatBody(query="q"),
                                       str(uuid.uuid4()))
        assert not FOREGROUND.busy  # a refused turn released what it took
        turn = await c.chat_service.start_unsaved(c.default_tenant_id, ChatBody(query="what is knora?"),
                                                  str(uuid.uuid4()), "knowledge", [])
        assert FOREGROUND.busy
        async for _ in turn.events():
            pass
        await c.chat_service.unsaved.close()
        assert not FOREGROUND.busy
