"""Bad input under /v1: OpenAI's error shape with the right status, never a 500; the body limit and the
request budgets apply to /v1 as to /api/v1."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import openai
import pytest

from knora.root import Services
from knora.settings import Settings
from tests.api.test_openai_chat import openai_client
from tests.conftest import TEST_API_KEY, client_for, started

pytestmark = pytest.mark.integration

USER = [{"role": "user", "content": "hi"}]


def assert_openai_error(r: httpx.Response, status: int, code: str,
                        param: str | None = None) -> dict[str, Any]:
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/json")
    err = r.json()["error"]
    assert set(err) == {"message", "type", "param", "code"}
    assert err["code"] == code
    assert err["message"]
    if param is not None:
        assert err["param"] == param
    return dict(err)


@pytest.fixture
async def lite(make_settings: Callable[..., Settings]) -> AsyncIterator[Services]:
    async with started(make_settings(max_chat_body_bytes=4096)) as c:
        yield c


async def test_missing_or_wrong_key_is_401(lite: Services) -> None:
    async with client_for(lite, **{"X-API-Key": ""}) as http:
        assert_openai_error(await http.get("/v1/models"), 401, "invalid_api_key")
        assert_openai_error(await http.post("/v1/chat/completions", json={"model": "knora:quick-answer",
                                                                         "messages": USER}),
                            401, "invalid_api_key")
    async with openai_client(lite, key="sk-wrong") as oa:
        with pytest.raises(openai.AuthenticationError) as err:
            await oa.chat.completions.create(model="knora:quick-answer", messages=USER)  # type: ignore[arg-type]
        assert err.value.code == "invalid_api_key"


async def test_unknown_model_is_404_model_not_found(lite: Services) -> None:
    async with openai_client(lite) as oa:
        for stream in (False, True):
            with pytest.raises(openai.NotFoundError) as err:
                await oa.chat.completions.create(model="gpt-4o", messages=USER, stream=stream)  # type: ignore
            assert err.value.code == "model_not_found"
            assert err.value.param == "model"


QA = "knora:quick-answer"


@pytest.mark.parametrize(("body", "param"), [
    ({"messages": USER}, "model"),
    ({"model": QA}, "messages"),
    ({"model": QA, "messages": []}, "messages"),
    ({"model": QA, "messages": "hi"}, "messages"),
    ({"model": 5, "messages": USER}, "model"),
    ({"model": QA, "messages": [{"content": "no role"}]}, "messages.0.role"),
    ({"model": QA, "messages": [{"role": "user", "content": [{"type": "text", "text": 5}]}]},
     None),
    ({"model": QA, "messages": USER, "stream": "perhaps"}, "stream"),
    ({"model": QA, "messages": USER, "stream_options": 3}, "stream_options"),
    ({"model": QA, "messages": USER, "n": 2}, "n"),
    ({"model": QA, "messages": [{"role": "system", "content": "only a system prompt"}]}, None),
    ({"model": QA, "messages": [*USER, {"role": "assistant", "content": "prefill"}]}, None),
    ({"model": QA, "messages": [{"role": "user", "content": [{"type": "image_url"}]}]}, None),
])
async def test_bad_bodies_are_400(lite: Services, body: dict[str, Any], param: str | None) -> None:
    async with client_for(lite) as http:
        r = await http.post("/v1/chat/completions", json=body)
    err = assert_openai_error(r, 400, r.json()["error"]["code"], param)
    assert err["type"] == "invalid_request_error"


@pytest.mark.parametrize("raw", [b"{not json", b"[1, 2]", b"", b"null", b"[" * 3000])
async def test_malformed_json_is_400(lite: Services, raw: bytes) -> None:
    async with client_for(lite) as http:
        r = await http.post("/v1/chat/completions", content=raw, headers={"content-type": "application/json"})
    assert_openai_error(r, 400, "invalid_request")


async def test_unknown_fields_are_ignored(lite: Services) -> None:
    async with client_for(lite) as http:
        r = await http.post("/v1/chat/completions", json={
            "model": "knora:quick-answer", "messages": USER, "tools": [{"type": "function"}], "seed": 1,
            "response_format": {"type": "text"}, "logit_bias": {}, "presence_penalty": 0, "stop": ["x"],
            "max_tokens": 10, "max_completion_tokens": 10, "top_p": 1})
    assert r.status_code == 200, r.text
    assert r.json()["object"] == "chat.completion"


async def test_a_body_over_the_limit_is_413_declared_or_not(lite: Services) -> None:
    big = [{"role": "user", "content": "x" * 5000}]
    async with openai_client(lite) as oa:
        with pytest.raises(openai.APIStatusError) as err:
            await oa.chat.completions.create(model="knora:quick-answer", messages=big)  # type: ignore
        assert err.value.status_code == 413
        assert err.value.code == "request_too_large"

    async def chunked() -> AsyncIterator[bytes]:
        yield b'{"model": "knora:quick-answer", "messages": [{"role": "user", "content": "'
        for _ in range(10):
            yield b"y" * 1000
        yield b'"}]}'

    async with client_for(lite) as http:
        r = await http.post("/v1/chat/completions", content=chunked(),
                            headers={"content-type": "application/json"})
    assert_openai_error(r, 413, "request_too_large")


async def test_unknown_v1_paths_are_openai_404s_not_the_web_ui(lite: Services) -> None:
    async with client_for(lite) as http:
        assert_openai_error(await http.get("/v1/nope"), 404, "not_found")
        assert_openai_error(await http.get("/v1"), 404, "not_found")
        # a wrong method is the app's 404 (the UI catch-all takes every method, as gin does), OpenAI-shaped
        assert_openai_error(await http.delete("/v1/models"), 404, "not_found")
        envelope = (await http.get("/api/v1/knowledge-bases/nope")).json()  # the rest keeps the envelope
    assert envelope["success"] is False
    assert "code" in envelope["error"]


async def test_v1_spends_the_request_budgets(make_settings: Callable[..., Settings]) -> None:
    settings = make_settings(rate_limit_per_minute=100, rate_limit_heavy_per_minute=2,
                             rate_limit_loopback=True)
    async with started(settings) as c, openai_client(c) as oa:
        for _ in range(2):
            await oa.chat.completions.create(model="knora:quick-answer", messages=USER)  # type: ignore
        with pytest.raises(openai.RateLimitError) as err:
            await oa.chat.completions.create(model="knora:quick-answer", messages=USER)  # type: ignore
        assert err.value.code == "rate_limit_exceeded"
        assert int(err.value.response.headers["Retry-After"]) >= 1
        assert (await oa.models.list()).data  # the heavy budget is the completions'; listing still runs
    assert TEST_API_KEY


class TestTranslate:
    """The envelope → OpenAI rewrite itself."""

    pytestmark = pytest.mark.unit

    def test_an_envelope_becomes_openai_shape_by_status(self) -> None:
        from knora.api.openai.errors import translate

        envelope = b'{"success": false, "error": {"code": 1006, "message": "slow down"}}'
        body = json.loads(translate(429, envelope))
        assert body == {"error": {"message": "slow down", "type": "rate_limit_error", "param": None,
                                  "code": "rate_limit_exceeded"}}

    def test_the_routes_own_fields_win(self) -> None:
        from knora.api.openai.errors import openai_fields, translate

        raw = json.dumps({"success": False, "error": {"code": 1003, "message": "no such model",
                                                      "details": openai_fields("model_not_found", "model")}})
        assert json.loads(translate(404, raw.encode()))["error"] == {
            "message": "no such model", "type": "invalid_request_error", "param": "model",
            "code": "model_not_found"}

    def test_plain_text_and_openai_bodies(self) -> None:
        from knora.api.openai.errors import translate

        assert json.loads(translate(404, b"404 page not found"))["error"]["message"] == "404 page not found"
        assert json.loads(translate(500, b""))["error"]["type"] == "server_error"
        already = b'{"error": {"message": "m", "type": "t", "param": null, "code": "c"}}'
        assert translate(400, already) == already
