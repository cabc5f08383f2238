"""``RequestBody.sent``: what the client sent, unknown fields included, no defaults added, not copied."""

from __future__ import annotations

from knora.api.schemas.wire import Obj, RequestBody, Str


class Body(RequestBody):
    name: Str = None
    config: Obj = None
    kind: Str = "default"


def test_sent_is_what_the_client_sent_in_declared_order_then_unknown_fields() -> None:
    raw = {"extra": [1, {"z": 2}], "config": {"a": [1]}, "name": "n"}
    body = Body.model_validate(raw)
    assert body.sent() == {"name": "n", "config": {"a": [1]}, "extra": [1, {"z": 2}]}
    assert list(body.sent()) == list(body.model_dump(exclude_unset=True))
    assert "kind" not in body.sent()  # a default is not something the client sent


def test_sent_hands_over_the_parsed_values_without_a_deep_copy() -> None:
    big = {"rows": [[i, str(i)] for i in range(1000)]}
    body = Body.model_validate({"config": big, "unknown": big})
    sent = body.sent()
    assert sent["config"] is body.config
    assert sent["unknown"] is body.model_extra["unknown"]  # type: ignore[index]
