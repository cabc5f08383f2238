"""``POST``/``DELETE /messages/:sid/:mid/feedback``: an answer's like/dislike, stored on the message and
answered with it by ``/messages/:sid/load``, through the real app on SQLite and PostgreSQL (the 0005
columns)."""

from __future__ import annotations

import httpx
import pytest

from knora.domain.conversation import Message
from knora.root import Services
from tests.conftest import client_for

pytestmark = pytest.mark.integration

MISSING = "00000000-0000-4000-8000-000000000000"


async def _turn(c: Services) -> tuple[str, str, str]:
    """A completed turn in a new session of the test tenant: (session id, user message id, answer id)."""
    s = await c.session_service.create(1, title="Tea")
    user = Message(session_id=s.id, tenant_id=1, request_id="r1", role="user", content="Green tea?",
                   is_completed=True)
    answer = Message(session_id=s.id, tenant_id=1, request_id="r1", role="assistant",
                     content="At 80 degrees.", is_completed=True)
    await c.session_service.messages.create_pair(user, answer)
    return s.id, user.id, answer.id


async def _loaded(http: httpx.AsyncClient, sid: str, mid: str) -> dict[str, object]:
    msgs = (await http.get(f"/api/v1/messages/{sid}/load")).json()["data"]
    return next(m for m in msgs if m["id"] == mid)


async def test_like_dislike_and_cancel_are_kept_on_the_answer(store_client: httpx.AsyncClient,
                                                              store_container: Services) -> None:
    sid, _, mid = await _turn(store_container)
    before = await _loaded(store_client, sid, mid)
    assert (before["feedback_rating"], before["feedback_reason"]) == ("", "")

    r = await store_client.post(f"/api/v1/messages/{sid}/{mid}/feedback",
                                json={"rating": "like", "reason": ""})
    assert r.status_code == 200, r.text
    assert r.json()["data"] == {"session_id": sid, "message_id": mid, "rating": "like", "reason": ""}
    assert (await _loaded(store_client, sid, mid))["feedback_rating"] == "like"

    # sending again switches the rating and keeps the reason given with a dislike
    r = await store_client.post(f"/api/v1/messages/{sid}/{mid}/feedback",
                          json={"rating": "dislike", "reason": " outdated "})
    got = await _loaded(store_client, sid, mid)
    assert (got["feedback_rating"], got["feedback_reason"]) == ("dislike", "outdated")

    r = await store_client.delete(f"/api/v1/messages/{sid}/{mid}/feedback")
    assert r.status_code == 200, r.text
    got = await _loaded(store_client, sid, mid)
    assert (got["feedback_rating"], got["feedback_reason"]) == ("", "")


async def test_bad_input_is_a_4xx_with_the_envelope(store_client: httpx.AsyncClient,
                                                    store_container: Services) -> None:
    sid, user_mid, mid = await _turn(store_container)
    for body in ({"rating": "meh"}, {}, {"rating": "dislike", "reason": 3}, [1]):
        r = await store_client.post(f"/api/v1/messages/{sid}/{mid}/feedback", json=body)
        assert r.status_code == 400, (body, r.text)
        assert r.json()["success"] is False
        assert r.json()["error"]["message"]
    long = await store_client.post(f"/api/v1/messages/{sid}/{mid}/feedback",
                             json={"rating": "dislike", "reason": "x" * 2001})
    assert long.status_code == 400
    question = await store_client.post(f"/api/v1/messages/{sid}/{user_mid}/feedback", json={"rating": "like"})
    assert question.status_code == 400  # a question is not rated
    for path in (f"{sid}/{MISSING}", f"{MISSING}/{mid}", f"{sid}/not-an-id"):
        assert (await store_client.post(f"/api/v1/messages/{path}/feedback",
                                  json={"rating": "like"})).status_code == 404
        assert (await store_client.delete(f"/api/v1/messages/{path}/feedback")).status_code == 404
    other_sid, _, _ = await _turn(store_container)  # the answer is not a message of that session
    assert (await store_client.post(f"/api/v1/messages/{other_sid}/{mid}/feedback",
                              json={"rating": "like"})).status_code == 404


async def test_another_tenant_cannot_rate(store_client: httpx.AsyncClient, store_container: Services) -> None:
    sid, _, mid = await _turn(store_container)
    _, key = await store_container.tenants.create("other")
    async with client_for(store_container, **{"X-API-Key": key}) as other:
        r = await other.post(f"/api/v1/messages/{sid}/{mid}/feedback", json={"rating": "dislike"})
        assert r.status_code == 404
        assert (await other.delete(f"/api/v1/messages/{sid}/{mid}/feedback")).status_code == 404
    assert (await _loaded(store_client, sid, mid))["feedback_rating"] == ""
