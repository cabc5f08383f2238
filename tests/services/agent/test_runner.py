"""SmartReasoningRunner: agent config → engine config, tool assembly, skills, errors (TurnRunner contract).

The model is the in-process function model: the wire to a model server is not what these tests are about."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from knora.adapters.tools._skills import load_skills, skills_prompt
from knora.adapters.tools.registry import CATALOG
from knora.domain.models import AgentConfig
from knora.domain.stream import BusEvent
from knora.ports.tool import ToolDeps
from knora.ports.turn import HistoryTurn, TurnContext, TurnRequest
from knora.services.agent.runner import RunnerDeps, SmartReasoningRunner
from knora.services.citations.registry import ReferenceRegistry
from knora.services.streaming.bus import EventBus
from knora.settings import Settings
from tests.fakes.function_model import FunctionModel, reply, script, tool_call
from tests.services.agent.helpers import Recorder

pytestmark = pytest.mark.unit


class Models:
    def __init__(self, model: Any) -> None:
        self.model = model
        self.asked: list[Any] = []

    async def get(self, model_id: str | None = None, *, tenant_id: int | None = None) -> Any:
        self.asked.append(model_id)
        if model_id == "missing":
            raise LookupError("no such model")
        return self.model


def request(config: dict[str, Any], **kw: Any) -> TurnRequest:
    return TurnRequest(tenant_id=1, session_id="s", request_id="r", user_message_id="u",
                       assistant_message_id="a",
                       query=kw.pop("query", "hello?"), agent=AgentConfig(name="t", config=config), **kw)


def runner(model: FunctionModel, tmp: Path | None = None, **settings: Any) -> tuple[SmartReasoningRunner,
                                                                                    Models]:
    s = Settings(sample_kb=False, **settings)
    models = Models(model)
    deps = RunnerDeps(chat_models=models, tool_deps=ToolDeps(settings=s), catalog=CATALOG,
                      skills_prompt=lambda allowed: skills_prompt(load_skills(s.skills_dir, allowed)),
                      engine_overrides={"retry_delays": [0.0, 0.0]})
    return SmartReasoningRunner(deps), models


def context() -> tuple[TurnContext, Recorder]:
    bus = EventBus()
    return TurnContext(bus=bus, references=ReferenceRegistry(), cancelled=asyncio.Event()), Recorder(bus)


async def test_answer_steps_history_and_model_choice() -> None:
    fake = script(reply(tool_calls=[tool_call("thinking", {"thought": "plan", "next_thought_needed": False,
                                                           "thought_number": 1, "total_thoughts": 1})]),
                  "Hi there.")
    r, models = runner(fake)
    ctx, rec = context()
    out = await r.run(request({"allowed_tools": ["thinking"], "model_id": "builtin-chat"}, history=[
        HistoryTurn(query="earlier?", answer="<think>x</think>Earlier answer.")]), ctx)
    assert out.answer == "Hi there."
    assert out.debug["tools"] == ["thinking"]
    assert models.asked == ["builtin-chat"]  # passed on as named: the registry resolves it, never to a row
    assert out.agent_steps[0]["tool_calls"][0]["name"] == "thinking"
    msgs = fake.requests[0].messages
    assert [m.role for m in msgs] == ["system", "user", "assistant", "user"]
    assert msgs[2].content == "Earlier answer."
    assert msgs[3].content.endswith("hello?")
    assert any(e.data.get("source") == "thinking_tool" for e in rec.of(BusEvent.THOUGHT))


async def test_invalid_agent_and_missing_model_end_with_an_error() -> None:
    fake = script()
    r, _ = runner(fake)
    ctx, rec = context()
    out = await r.run(request({"max_iterations": 500}), ctx)
    assert out.answer == ""
    assert "max iterations too high" in rec.of(BusEvent.ERROR)[0].data["error"]
    ctx, rec = context()
    out = await r.run(request({"model_id": "missing"}), ctx)
    assert "chat model unavailable" in rec.of(BusEvent.ERROR)[0].data["error"]
    assert fake.requests == []


async def test_skills_are_offered_and_pinned_per_request(tmp_path: Path) -> None:
    for name in ("greeter", "counter"):
        d = tmp_path / name
        d.mkdir()
        (d / "SKILL.md").write_text(f"---\nname: {name}\ndescription: the {name} skill\n---\nbody\n")
    fake = script("ok")
    r, _ = runner(fake, skills_enabled=True, skills_dir=tmp_path)
    ctx, _ = context()
    out = await r.run(request({"skills_selection_mode": "all", "allowed_tools": ["thinking"]},
                              skill_names=["greeter"]), ctx)
    assert out.debug["tools"] == ["execute_skill_script", "read_skill", "thinking"]
    system, user = fake.requests[0].messages[0].content, fake.requests[0].messages[-1].content
    assert "greeter: the greeter skill" in system
    assert "counter" not in system
    assert 'Must call read_skill(skill_name="greeter")' in user


async def test_skills_off_by_default(tmp_path: Path) -> None:
    fake = script("ok")
    r, _ = runner(fake, skills_dir=tmp_path)  # skills_enabled stays False
    ctx, _ = context()
    out = await r.run(request({"skills_selection_mode": "all"}), ctx)
    assert out.debug["tools"] == ["thinking"]  # defaults, no knowledge scope, no skills
