"""WeKnora's evaluation routes: POST /evaluation starts a background run, GET /evaluation?task_id= reports it;
datasets only from the operator's folder; another tenant's task is a 404; bad sets are a 400 naming the
line."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from knora.root import Services
from knora.settings import Settings
from tests.cli.test_eval import small_set
from tests.conftest import client_for, started
from tests.polling import eventually

pytestmark = pytest.mark.integration


@pytest.fixture
def sets(tmp_path: Path) -> Path:
    root = tmp_path / "sets"
    small_set(root / "small")
    bad = small_set(root / "bad")
    (bad / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\nq-tea\ttea\tvery\n")
    outside = small_set(tmp_path / "outside")
    (root / "link").symlink_to(outside, target_is_directory=True)
    return root


@pytest.fixture
async def eval_container(make_settings: Callable[..., Settings], sets: Path) -> AsyncIterator[Services]:
    async with started(make_settings(evaluation_data_dir=sets)) as c:
        yield c


@pytest.fixture
async def http(eval_container: Services) -> AsyncIterator[httpx.AsyncClient]:
    async with client_for(eval_container) as client:
        yield client


async def finished(http: httpx.AsyncClient, task_id: str) -> dict[str, Any]:
    async def done() -> dict[str, Any] | None:
        r = await http.get("/api/v1/evaluation", params={"task_id": task_id})
        assert r.status_code == 200, r.text
        data: dict[str, Any] = r.json()["data"]
        return data if data["task"]["status"] >= 2 else None

    detail = await eventually(done, timeout=60)
    assert detail is not None, "the evaluation did not finish"
    return detail


class TestEvaluationRoutes:
    async def test_post_then_get_until_done(self, http: httpx.AsyncClient) -> None:
        r = await http.post("/api/v1/evaluation", json={"dataset_id": "small", "embedding_id": "local:hash",
                                                        "unknown_field": 1})
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["success"] is True
        task = body["data"]["task"]
        assert task["id"].startswith("evaluation-")
        assert task["dataset_id"] == "small"
        assert task["status"] in (0, 1)
        assert task["total"] == 6  # 3 searches + 3 answer turns
        assert task["start_time"].endswith("Z")
        assert "metric" not in body["data"]
        detail = await finished(http, task["id"])
        assert detail["task"]["status"] == 2, detail
        assert detail["task"]["finished"] == 6
        retrieval = detail["metric"]["retrieval_metrics"]
        assert set(retrieval) == {"precision", "recall", "ndcg3", "ndcg10", "mrr", "map"}
        assert retrieval["ndcg10"] == pytest.approx(1.0)
        assert retrieval["recall"] == 1.0
        generation = detail["metric"]["generation_metrics"]
        assert set(generation) == {"bleu1", "bleu2", "bleu4", "rouge1", "rouge2", "rougel"}
        assert 0 < generation["rouge1"] < 1
        assert detail["params"]["embedding_model_id"] == "local:hash"
        report = detail["report"]
        assert report["answers"]["contains_gold"] == 1.0
        assert "per_query" not in report

    async def test_a_foreign_tenant_cannot_read_the_task(self, http: httpx.AsyncClient,
                                                         eval_container: Services) -> None:
        r = await http.post("/api/v1/evaluation", json={"dataset_id": "small", "answers": False})
        task_id = r.json()["data"]["task"]["id"]
        await eval_container.tenants.create("other", "sk-other-tenant")
        async with client_for(eval_container, **{"X-API-Key": "sk-other-tenant"}) as other:
            r = await other.get("/api/v1/evaluation", params={"task_id": task_id})
        assert r.status_code == 404
        assert r.json()["success"] is False
        await finished(http, task_id)  # the owner still reads it
        r = await http.get("/api/v1/evaluation", params={"task_id": "evaluation-unknown"})
        assert r.status_code == 404

    async def test_a_bad_set_is_a_400_naming_the_line(self, http: httpx.AsyncClient) -> None:
        r = await http.post("/api/v1/evaluation", json={"dataset_id": "bad"})
        assert r.status_code == 400
        error = r.json()["error"]
        assert error["message"] == "qrels.tsv:2: score 'very' is not a number"
        assert error["code"] == 1000

    @pytest.mark.parametrize(("dataset_id", "status"), [
        ("../outside", 400), ("small/../small", 400), ("/etc", 400), (".hidden", 400),
        ("link", 404),  # a symlink out of the folder resolves outside it
        ("missing", 404), ("", 404),  # '' is WeKnora's "default", which this folder lacks
    ])
    async def test_dataset_ids_stay_inside_the_folder(self, http: httpx.AsyncClient, dataset_id: str,
                                                      status: int) -> None:
        r = await http.post("/api/v1/evaluation", json={"dataset_id": dataset_id})
        assert r.status_code == status, r.text
        assert r.json()["success"] is False

    async def test_bad_requests(self, http: httpx.AsyncClient) -> None:
        r = await http.post("/api/v1/evaluation", json={"dataset_id": "small", "fusion": "nope"})
        assert r.status_code == 400
        assert "unknown fusion mode" in r.json()["error"]["message"]
        r = await http.post("/api/v1/evaluation", json={"dataset_id": "small", "match_count": 0})
        assert r.status_code == 400
        r = await http.post("/api/v1/evaluation", json={"dataset_id": "small", "embedding_id": "nope:x"})
        assert r.status_code == 400
        assert r.json()["error"]["message"].startswith("embedder 'nope:x'")
        r = await http.post("/api/v1/evaluation", json={"dataset_id": 5})
        assert r.status_code == 400
        r = await http.post("/api/v1/evaluation", json={"dataset_id": "small", "knowledge_base_id": "nope"})
        assert r.status_code == 404
        r = await http.get("/api/v1/evaluation")
        assert r.status_code == 400
        r = await http.post("/api/v1/evaluation", json={"dataset_id": "small"}, headers={"X-API-Key": "bad"})
        assert r.status_code == 401


async def test_closed_without_an_operator_folder(sqlite_client: httpx.AsyncClient) -> None:
    r = await sqlite_client.post("/api/v1/evaluation", json={"dataset_id": "xquad-en"})
    assert r.status_code == 400
    assert "KNORA_EVALUATION_DATA_DIR" in r.json()["error"]["message"]
