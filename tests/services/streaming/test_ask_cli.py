"""``knora ask``: one streamed, cited turn in the terminal."""

from __future__ import annotations

import argparse
import io
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from knora.cli.ask import ask, register
from knora.settings import Settings
from tests.services.streaming.runners import ScriptedRunner

pytestmark = pytest.mark.integration


@pytest.fixture
async def c(make_settings: Callable[..., Settings]) -> AsyncIterator[Any]:
    from tests.conftest import started

    async with started(make_settings()) as container:
        container.runners.quick = ScriptedRunner()
        yield container


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    return parser.parse_args(["ask", *argv])


async def test_streams_answer_with_numbered_sources(c: Any) -> None:
    out, err = io.StringIO(), io.StringIO()
    assert await ask(c, parse("How does Knora stream?"), out, err) == 0
    text = out.getvalue()
    assert text.startswith("Knora streams answers[1] and stops anywhere[2]. Bogus.")
    assert "[1] Manual\n[2] Manual" in text
    assert "Calling tool: knowledge_search" in err.getvalue()
    sid = err.getvalue().rsplit("session ", 1)[1].strip()
    msgs = await c.session_service.load_messages(c.default_tenant_id, sid)
    assert [m.role for m in msgs] == ["user", "assistant"]
    assert msgs[1].is_completed


async def test_json_mode_and_bad_session(c: Any) -> None:
    out, err = io.StringIO(), io.StringIO()
    assert await ask(c, parse("q", "--json"), out, err) == 0
    kinds = [json.loads(line)["response_type"] for line in out.getvalue().splitlines()]
    assert kinds[0] == "agent_query"
    assert "complete" in kinds
    assert await ask(c, parse("q", "--session", "00000000-0000-0000-0000-000000000000"), out, err) == 2
    assert "Session not found" in err.getvalue()
