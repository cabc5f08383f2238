"""The fake server speaks OpenAI's wire protocol well enough for the real ``openai`` client."""

from __future__ import annotations

import httpx
import openai
import pytest

from tests.fakes import FakeModelServer, Reply

pytestmark = pytest.mark.integration


class TestFakeModelServer:
    async def test_streams_content_reasoning_and_tool_calls_in_pieces(self) -> None:
        async with FakeModelServer() as fake:
            fake.script([Reply(content="Hello world", reasoning_content="hmm", chunk_size=3,
                               tool_calls=[{"name": "search", "arguments": {"q": "x"}}])])
            client = openai.AsyncOpenAI(base_url=fake.base_url, api_key="k", max_retries=0)
            stream = await client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "hi"}], stream=True,
                stream_options={"include_usage": True})
            content, reasoning, args, finish, usage = [], [], [], None, None
            async for chunk in stream:
                if chunk.usage:
                    usage = chunk.usage
                for choice in chunk.choices:
                    delta = choice.delta
                    content.append(delta.content or "")
                    reasoning.append(getattr(delta, "reasoning_content", None) or "")
                    for tc in delta.tool_calls or []:
                        args.append(tc.function.arguments or "")
                    finish = choice.finish_reason or finish
            await client.close()
        assert "".join(content) == "Hello world"
        assert [c for c in content if c] == ["Hel", "lo ", "wor", "ld"]
        assert "".join(reasoning) == "hmm"
        assert "".join(args) == '{"q": "x"}'
        assert finish == "tool_calls"
        assert usage is not None
        assert usage.total_tokens > 0

    def test_echo_when_script_is_empty_and_records_requests(self) -> None:
        with FakeModelServer() as fake:
            client = openai.OpenAI(base_url=fake.base_url, api_key="k", max_retries=0)
            resp = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "ping 1"}])
            client.close()
            assert resp.choices[0].message.content == "ping 1"
            assert fake.requests[0]["messages"][0]["content"] == "ping 1"

    def test_handler_then_error_status(self) -> None:
        with FakeModelServer() as fake:
            fake.handler = lambda body: Reply(content=f"n={len(body['messages'])}")
            fake.script([Reply(status=503, error="overloaded")])
            client = openai.OpenAI(base_url=fake.base_url, api_key="k", max_retries=0)
            with pytest.raises(openai.InternalServerError):
                client.chat.completions.create(model="m", messages=[{"role": "user", "content": "a"}])
            resp = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "a"}] * 2)
            client.close()
            assert resp.choices[0].message.content == "n=2"

    def test_embeddings_are_deterministic_and_rerank_orders_by_overlap(self) -> None:
        with FakeModelServer() as fake:
            one = httpx.post(f"{fake.base_url}/embeddings", json={"input": ["a b", "a b"],
                                                                  "model": "e"}).json()
            assert one["data"][0]["embedding"] == one["data"][1]["embedding"]
            assert len(one["data"][0]["embedding"]) == 64
            rr = httpx.post(f"{fake.base_url}/rerank", json={
                "query": "red apple", "documents": ["blue sky", "red apple pie", "apple"]}).json()
            assert [r["index"] for r in rr["results"]] == [1, 2, 0]
            tei = httpx.post(f"{fake.root_url}/rerank", json={"query": "red", "texts": ["red", "x"]}).json()
            assert tei[0] == {"index": 0, "score": 1.0}
            models = httpx.get(f"{fake.base_url}/models").json()
            assert "fake-chat" in [m["id"] for m in models["data"]]
