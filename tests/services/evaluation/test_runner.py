"""The runner with a generative chat model and a reranker (the fake OpenAI-compatible server): judged
faithfulness over the cited passages, reranked retrieval metrics beside the plain ones."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from knora.root import Services
from knora.services.evaluation.judge import parse_verdict
from knora.services.evaluation.options import EvalOptions
from knora.settings import Settings
from tests.cli.test_eval import small_set
from tests.conftest import started
from tests.fakes import FakeModelServer, Reply

pytestmark = pytest.mark.integration



@pytest.fixture
async def services(make_settings: Callable[..., Settings], fake: FakeModelServer) -> AsyncIterator[Services]:
    async with started(make_settings(chat_model="openai:fake-chat", chat_base_url=fake.base_url,
                                     chat_api_key="k", rerank_base_url=fake.base_url)) as c:
        yield c


def test_parse_verdict() -> None:
    assert parse_verdict('{"verdict": "supported", "reason": "c1 says so"}') == 1.0
    assert parse_verdict('Sure! {"verdict": "Partial"}') == 0.5
    assert parse_verdict("The answer is unsupported.") == 0.0
    assert parse_verdict("I cannot tell.") is None


async def test_judged_faithfulness_over_the_cited_passage(services: Services, fake: FakeModelServer,
                                                          tmp_path: Path) -> None:
    fake.script([Reply(content=json.dumps({"rewrite_query": "oolong tea processing", "intent": "kb_search"})),
                 Reply(content='It is partially oxidised <ref id="c1"/>.'),
                 Reply(content='{"verdict": "partial", "reason": "half of it"}')])
    report = await services.evaluation.evaluate(services.default_tenant_id, small_set(tmp_path / "set"),
                                                EvalOptions(limit=1, rerank_model="jina:fake-rerank"))
    assert report.answers is not None
    assert report.answers.answer_model.endswith("fake-chat")
    assert report.answers.judge_model == report.answers.answer_model
    assert (report.answers.judged, report.answers.faithfulness) == (1, 0.5)
    [tea] = report.per_query
    assert tea.query_id == "q-tea"
    assert tea.contains_gold is True  # "partially oxidised"
    assert tea.faithfulness == 0.5
    [judge] = [r for r in fake.chat_requests
               if "supported by the passages it cites" in r["messages"][0]["content"]]
    prompt = judge["messages"][1]["content"]
    assert "Oolong tea is partially oxidised" in prompt  # the cited passage, and only it
    assert "narrow tyres" not in prompt
    assert "Answer: It is partially oxidised ." in prompt  # without the citation mark
    # reranked figures beside the retrieval ones (the fake reranker scores lexically)
    assert report.reranked is not None
    assert set(report.reranked) == set(report.retrieval)
    assert [b["model"] for p, b in fake.calls if p.endswith("/rerank")][:1] == ["fake-rerank"]


async def test_an_unknown_rerank_model_is_a_bad_request(services: Services, tmp_path: Path) -> None:
    from knora.domain.errors import BadRequest

    with pytest.raises(BadRequest, match="rerank model"):
        await services.evaluation.evaluate(services.default_tenant_id, small_set(tmp_path / "set"),
                                           EvalOptions(rerank_model="no-such-model"))
    assert await services.repos.kbs.list(services.default_tenant_id) == []  # nothing left behind


async def test_a_failure_midway_still_deletes_the_scratch_kb(services: Services, fake: FakeModelServer,
                                                             tmp_path: Path) -> None:
    from knora.domain.errors import AppError

    fake.rerank_status = 500
    with pytest.raises(AppError, match="rerank failed"):
        await services.evaluation.evaluate(services.default_tenant_id, small_set(tmp_path / "set"),
                                           EvalOptions(rerank_model="jina:fake-rerank", answers=False))
    assert await services.repos.kbs.list(services.default_tenant_id) == []
