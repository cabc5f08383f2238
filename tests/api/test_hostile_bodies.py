"""Hostile JSON bodies are 400s with the envelope, never 500s (issue 20, item 3): nesting is measured on the
raw bytes before parsing, every route reads its body through ``knora.api.body``."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest

from knora.api.body import MAX_JSON_DEPTH, parse_json, too_deep
from knora.domain.errors import BadRequest

DEEP = b"[" * 100_000 + b"]" * 100_000
DEEP_OBJECT = b'{"a":' * 100_000 + b"1" + b"}" * 100_000


class TestDepth:
    @pytest.mark.parametrize(("raw", "deep"), [
        (b"[]", False), (b"[" * MAX_JSON_DEPTH + b"]" * MAX_JSON_DEPTH, False),
        (b"[" * (MAX_JSON_DEPTH + 1) + b"]" * (MAX_JSON_DEPTH + 1), True), (DEEP, True), (DEEP_OBJECT, True),
        (b'{"a": "' + b"[" * 1000 + b'"}', False),  # brackets inside a string do not nest
        (b'{"a": "\\"' + b"[" * 1000 + b'"}', False),  # nor after an escaped quote
        (b'{"a": "\\\\"}' + b"", False),
        (b"[]" * 100_000, False),  # many, but flat
        (b'[{"a": [1, {"b": [[]]}]}]', False),
    ])
    def test_too_deep(self, raw: bytes, deep: bool) -> None:
        assert too_deep(raw) is deep

    @pytest.mark.parametrize(("raw", "message"), [
        (DEEP, "JSON nested too deeply"), (DEEP_OBJECT, "JSON nested too deeply"),
        (b'{"a": NaN}', "Malformed JSON body"), (b'{"a": -Infinity}', "Malformed JSON body"),
        (b'{"a": "\\ud800"}', "lone UTF-16 surrogate"), (b"\xff{}", "Malformed JSON body"),
        (b"{oops", "Malformed JSON body"),
    ])
    def test_refused(self, raw: bytes, message: str) -> None:
        with pytest.raises(BadRequest, match=message):
            parse_json(raw)

    def test_accepted(self) -> None:
        assert parse_json(b'{"a": "\\ud83d\\ude00", "b": [1.5, null]}') == {"a": "😀", "b": [1.5, None]}


def _envelope(r: httpx.Response, status: int = 400) -> dict[str, Any]:
    assert r.status_code == status, r.text
    body = r.json()
    assert body["success"] is False
    assert isinstance(body["error"]["code"], int)
    assert body["error"]["message"]
    return body  # type: ignore[no-any-return]


NOWHERE = "00000000-0000-0000-0000-000000000001"


class TestRoutes:
    async def test_the_reported_routes_refuse_deep_bodies(self, lite_client: httpx.AsyncClient) -> None:
        kb = (await lite_client.post("/api/v1/knowledge-bases", json={"name": "deep"})).json()["data"]["id"]
        sid = (await lite_client.post("/api/v1/sessions", json={})).json()["data"]["id"]
        for method, url in [("POST", "/api/v1/sessions"), ("POST", f"/api/v1/sessions/{sid}/stop"),
                            ("POST", f"/api/v1/knowledge-bases/{kb}/hybrid-search"),
                            ("GET", f"/api/v1/knowledge-bases/{kb}/hybrid-search"),
                            ("POST", f"/api/v1/knowledge-bases/{kb}/faq/entries"),
                            ("POST", f"/api/v1/knowledge-bases/{kb}/faq/search"),
                            ("POST", f"/api/v1/knowledge-chat/{sid}"), ("POST", "/api/v1/auth/login"),
                            ("POST", "/api/v1/auth/refresh"), ("POST", "/api/v1/agents")]:
            for raw in (DEEP, DEEP_OBJECT):
                r = await lite_client.request(method, url, content=raw,
                                              headers={"Content-Type": "application/json"})
                assert "nested too deeply" in _envelope(r)["error"]["message"], (method, url)

    async def test_a_list_body_to_refresh(self, lite_client: httpx.AsyncClient) -> None:
        r = await lite_client.post("/api/v1/auth/refresh", json=["refreshToken"])
        assert _envelope(r)["error"]["message"] == "The request body must be a JSON object"
        r = await lite_client.post("/api/v1/auth/refresh", json={"refreshToken": ["a"]})
        assert _envelope(r)["error"]["message"] == "refreshToken: Input should be a valid string"

    async def test_lists_in_the_string_fields_of_an_agent(self, lite_client: httpx.AsyncClient) -> None:
        for body in ({"name": ["a"]}, {"name": "a", "description": ["x"]}, {"name": "a", "avatar": {"x": 1}},
                     {"name": "a", "config": {"system_prompt": ["x"]}}, {"name": "a", "config": ["x"]},
                     {"name": "a", "config": {"model_id": ["x"], "temperature": "hot"}}):
            r = await lite_client.post("/api/v1/agents", json=body)
            assert r.status_code < 500, (body, r.text)
            if r.status_code >= 400:
                _envelope(r, r.status_code)

    async def test_stop_errors_are_the_envelope(self, lite_client: httpx.AsyncClient) -> None:
        sid = (await lite_client.post("/api/v1/sessions", json={})).json()["data"]["id"]
        body = _envelope(await lite_client.post(f"/api/v1/sessions/{sid}/stop", json={}))
        assert body["error"] == {"code": 1000, "message": "message_id is required"}
        body = _envelope(await lite_client.post(f"/api/v1/sessions/{uuid.uuid4()}/stop",
                                                json={"message_id": NOWHERE}), 404)
        assert body["error"]["message"] == "Message not found"

    async def test_a_failed_login_is_weknoras_shape_and_the_envelope(self,
                                                                    lite_client: httpx.AsyncClient) -> None:
        """WeKnora's login page reads ``success``/``message``; the same body carries the envelope's error."""
        for body in ({"password": "wrong"}, {"email": "nobody@example.com", "password": "wrong-password"},
                     {}):
            r = await lite_client.post("/api/v1/auth/login", json=body, headers={"X-API-Key": ""})
            got = _envelope(r, 401)
            assert got["message"] == got["error"]["message"]
            assert got["error"]["code"] == 1001
        r = await lite_client.post("/api/v1/auth/login", json={"password": ["x"]})
        assert _envelope(r)["error"]["message"] == "password: Input should be a valid string"
