"""``GET /models/usage`` through the real app on SQLite: token counts per model summed from the tenant's
stored answers in the window, WeKnora's row shape, no invented cache or cost figures."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from knora.domain.common import utcnow
from knora.domain.conversation import Message
from knora.domain.models import ModelConfig
from knora.root import Services
from tests.conftest import client_for

pytestmark = pytest.mark.integration


async def _answer(c: Services, tenant: int, model_id: str, usage: dict[str, int] | None,
                  at: datetime | None = None) -> None:
    s = await c.session_service.create(tenant, title="t")
    when = at or utcnow()
    user = Message(session_id=s.id, tenant_id=tenant, request_id="r", role="user", content="q",
                   is_completed=True, created_at=when)
    answer = Message(session_id=s.id, tenant_id=tenant, request_id="r", role="assistant", content="a",
                     is_completed=True, model_id=model_id, debug={"usage": usage} if usage else {},
                     created_at=when)
    await c.session_service.messages.create_pair(user, answer)


async def test_usage_per_model_from_stored_answers(sqlite_container: Services) -> None:
    c = sqlite_container
    chat = await c.repos.models.create(ModelConfig(tenant_id=1, name="qwen-plus", display_name="Qwen Plus",
                                                   type="KnowledgeQA"))
    await _answer(c, 1, chat.id, {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120})
    await _answer(c, 1, chat.id, {"prompt_tokens": 50, "completion_tokens": 5, "total_tokens": 55})
    # a model since deleted: its answers still count, without a name
    await _answer(c, 1, "deleted-model", {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10})
    await _answer(c, 1, chat.id, None)  # the model reported nothing: not counted
    await _answer(c, 1, chat.id, {"prompt_tokens": 999, "completion_tokens": 1, "total_tokens": 1000},
                  at=utcnow() - timedelta(days=30))  # outside the default 7 days
    _, key = await c.tenants.create("other")
    async with client_for(c) as http:
        r = await http.get("/api/v1/models/usage")
        assert r.status_code == 200, r.text
        rows = r.json()["data"]
        assert [(x["model_id"], x["call_count"], x["prompt_tokens"], x["completion_tokens"],
                 x["total_tokens"]) for x in rows] == [(chat.id, 2, 150, 25, 175),
                                                       ("deleted-model", 1, 7, 3, 10)]
        assert (rows[0]["model_name"], rows[0]["model_type"]) == ("Qwen Plus", "KnowledgeQA")
        assert (rows[1]["model_name"], rows[1]["model_type"]) == ("", "")
        assert all((x["cached_tokens"], x["cache_hit_rate"], x["cost"], x["currency"]) == (0, 0.0, 0.0, "")
                   for x in rows)

        # a window that takes in the old answer; one with nothing in it
        old = int((utcnow() - timedelta(days=31)).timestamp())
        wide = (await http.get("/api/v1/models/usage", params={"start": str(old)})).json()["data"]
        assert wide[0]["total_tokens"] == 1175
        empty = await http.get("/api/v1/models/usage", params={"start": "2020-01-01T00:00:00Z",
                                                                "end": "2020-01-02T00:00:00+00:00"})
        assert empty.json() == {"success": True, "data": []}

    async with client_for(c, **{"X-API-Key": key}) as other:  # another tenant sees none of it
        assert (await other.get("/api/v1/models/usage")).json()["data"] == []


@pytest.mark.parametrize("params", [{"start": "yesterday"}, {"end": "2024-13-01T00:00:00Z"},
                                    {"start": "2024-01-01T00:00:00"},
                                    {"start": "2024-02-01T00:00:00Z", "end": "2024-01-01T00:00:00Z"},
                                    {"start": "9" * 30}, {"start": "x" * 100}])
async def test_bad_times_are_400(sqlite_container: Services, params: dict[str, str]) -> None:
    async with client_for(sqlite_container) as http:
        r = await http.get("/api/v1/models/usage", params=params)
    assert r.status_code == 400, r.text
    assert r.json()["success"] is False
