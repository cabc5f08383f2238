"""Providers against the fake server through the real clients (openai, httpx)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from knora.adapters.llm.extractive import ExtractiveAnswerer
from knora.adapters.llm.ollama_chat import OllamaChatModel
from knora.adapters.llm.openai_chat import OpenAIChatModel
from knora.adapters.llm.registry import ChatModelRegistry, ModelNotConfigured, RerankerRegistry
from knora.adapters.llm.rerank_http import HttpReranker
from knora.domain.models import ModelConfig
from knora.domain.think import ThinkSplitter
from knora.ports.chat import ChatMessage, ChatModel, ChatOptions, ModelError
from knora.settings import Settings
from tests.fakes import FakeModelServer, Reply

USER = [ChatMessage(role="user", content="hello")]


async def collect(model: ChatModel, messages: list[ChatMessage] = USER, options: ChatOptions | None = None):
    answer, reasoning, chunks = [], [], []
    async for chunk in model.stream(messages, options):
        chunks.append(chunk)
        answer.append(chunk.content)
        reasoning.append(chunk.reasoning_content)
    return "".join(answer), "".join(reasoning), chunks


@pytest.mark.unit
class TestThinkSplitter:
    def test_tags_split_across_deltas(self) -> None:
        s = ThinkSplitter()
        pieces = ["<th", "ink>plan", " a</th", "ink>ans", "wer <", "b>"]
        out = [s.feed(p) for p in pieces] + [s.flush()]
        assert "".join(a for a, _ in out) == "answer <b>"
        assert "".join(r for _, r in out) == "plan a"


@pytest.mark.integration
class TestOpenAIChatModel:
    async def test_stream_splits_reasoning_and_assembles_tool_calls(self) -> None:
        async with FakeModelServer() as fake:
            fake.script([Reply(content="Answer", reasoning_content="think hard", chunk_size=2,
                               tool_calls=[{"name": "kb", "arguments": {"q": "长句子"}},
                                           {"name": "web", "arguments": '{"u": 1}'}])])
            model = OpenAIChatModel("m", base_url=fake.base_url, api_key="k", max_retries=0)
            answer, reasoning, chunks = await collect(model)
            await model.close()
        assert answer == "Answer"
        assert reasoning == "think hard"
        final = chunks[-1]
        assert final.finish_reason == "tool_calls"
        assert [(c.name, c.arguments) for c in final.tool_calls] == [("kb", '{"q": "长句子"}'), ("web",
                                                                                              '{"u": 1}')]
        assert all(not c.tool_calls for c in chunks[:-1])
        assert final.usage is not None
        assert final.usage.total_tokens > 0
        assert fake.requests[0]["stream_options"] == {"include_usage": True}

    async def test_inline_think_tags_go_to_reasoning(self) -> None:
        async with FakeModelServer() as fake:
            fake.script([Reply(content="\n\nThe answer", reasoning_content="secret", think_tags=True,
                               chunk_size=3),
                         Reply(content="x", reasoning_content="r", think_tags=True)])
            model = OpenAIChatModel("m", base_url=fake.base_url, max_retries=0)
            answer, reasoning, _ = await collect(model)
            resp = await model.chat(USER)
            await model.close()
        assert (answer, reasoning) == ("The answer", "secret")
        assert (resp.content, resp.reasoning_content) == ("x", "r")

    async def test_errors_are_classified(self) -> None:
        async with FakeModelServer() as fake:
            fake.script([Reply(status=429), Reply(status=400, error="bad"), Reply(content="abcdef",
                                                                                  chunk_size=1,
                                                                                 abort_after_chunks=3)])
            model = OpenAIChatModel("m", base_url=fake.base_url, max_retries=0)
            with pytest.raises(ModelError) as e1:
                await model.chat(USER)
            with pytest.raises(ModelError) as e2:
                await collect(model)
            with pytest.raises(ModelError) as e3:
                await collect(model)
            await model.close()
        assert e1.value.transient
        assert e1.value.status == 429
        assert not e2.value.transient
        assert e2.value.status == 400
        assert e3.value.transient

    async def test_options_reach_the_wire(self) -> None:
        async with FakeModelServer() as fake:
            model = OpenAIChatModel("m", base_url=fake.base_url, max_retries=0,
                                    thinking_param="enable_thinking")
            opts = ChatOptions(temperature=0.3, max_tokens=150, thinking=False,
                               response_format={"type": "json_object"}, extra={"passages": [1], "seed": 7})
            resp = await model.chat(USER, opts)
            await model.close()
        body = fake.requests[0]
        assert resp.content == "hello"
        assert (body["temperature"], body["max_tokens"], body["enable_thinking"],
                body["seed"]) == (0.3, 150, False, 7)
        assert "passages" not in body

    async def test_images_go_as_vision_parts_and_the_fake_describes_them(self) -> None:
        import base64
        import io

        from PIL import Image

        buf = io.BytesIO()
        Image.new("RGB", (40, 20), (30, 60, 220)).save(buf, format="PNG")
        url = "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()
        async with FakeModelServer() as fake:
            model = OpenAIChatModel("vlm", base_url=fake.base_url, api_key="k", max_retries=0)
            resp = await model.chat([ChatMessage(role="system", content="s"),
                                     ChatMessage(role="user", content="what is it?", images=[url])])
            await model.close()
        assert resp.content == "The picture shows a 40x20 pixel image, mostly blue."
        user = fake.chat_requests[0]["messages"][1]
        assert user["content"] == [{"type": "text", "text": "what is it?"},
                                   {"type": "image_url", "image_url": {"url": url}}]
        assert fake.chat_requests[0]["messages"][0]["content"] == "s"  # only user messages carry images


@pytest.mark.integration
class TestOllamaChatModel:
    async def test_images_are_bare_base64(self) -> None:
        async with FakeModelServer() as fake:
            fake.script([Reply(content="ok")])
            model = OllamaChatModel("q", base_url=fake.base_url)
            await model.chat([ChatMessage(role="user", content="see", images=["data:image/png;base64,QUJD"])])
            await model.close()
        assert fake.requests[0]["messages"][0]["images"] == ["QUJD"]

    async def test_stream_and_chat(self) -> None:
        async with FakeModelServer() as fake:
            fake.script([Reply(content="hi there", reasoning_content="hmm", chunk_size=3,
                               tool_calls=[{"name": "t", "arguments": {"a": 1}}]),
                         Reply(content="x", reasoning_content="y", think_tags=True)])
            model = OllamaChatModel("q", base_url=fake.base_url)  # the /v1 suffix is tolerated
            answer, reasoning, chunks = await collect(model, options=ChatOptions(max_tokens=5, thinking=True))
            resp = await model.chat(USER)
            await model.close()
        assert (answer, reasoning) == ("hi there", "hmm")
        assert chunks[-1].finish_reason == "tool_calls"
        assert chunks[-1].tool_calls[0].arguments == '{"a": 1}'
        assert fake.requests[0]["options"] == {"num_predict": 5}
        assert fake.requests[0]["think"] is True
        assert (resp.content, resp.reasoning_content) == ("x", "y")


@pytest.mark.integration
class TestHttpReranker:
    async def test_jina_and_tei_shapes_sorted_best_first(self) -> None:
        async with FakeModelServer() as fake:
            fake.rerank_scorer = lambda q, d: {"a": 0.2, "b": 0.9, "c": 0.5}[d]
            jina = HttpReranker("r", base_url=fake.base_url)
            tei = HttpReranker("r", base_url=fake.root_url, style="tei")
            s1 = await jina.rerank("q", ["a", "b", "c"], top_n=2)
            s2 = await tei.rerank("q", ["a", "b", "c"])
            fake.rerank_status = 503
            with pytest.raises(ModelError) as err:
                await jina.rerank("q", ["a"])
            await jina.close()
            await tei.close()
        assert [(s.index, s.score) for s in s1] == [(1, 0.9), (2, 0.5)]
        assert [s.index for s in s2] == [1, 2, 0]
        assert err.value.transient


class _Rows:
    def __init__(self, rows: list[ModelConfig]) -> None:
        self.rows = {r.id: r for r in rows}

    async def get(self, tenant_id: int | None, model_id: str) -> ModelConfig | None:
        return self.rows.get(model_id)

    async def list(self, tenant_id: int, *, type: str | None = None) -> list[ModelConfig]:
        return [r for r in self.rows.values() if type is None or r.type == type]


@pytest.mark.integration
class TestRegistry:
    async def test_resolution_order(self, make_settings: Callable[..., Settings]) -> None:
        async with FakeModelServer() as fake:
            row = ModelConfig(tenant_id=1, name="fake-chat", type="KnowledgeQA",
                              parameters={"base_url": fake.base_url, "provider": "openai"}, api_key="k")
            rr = ModelConfig(tenant_id=1, name="fake-rerank", type="Rerank",
                             parameters={"base_url": fake.base_url})
            rows = _Rows([row, rr])
            reg = ChatModelRegistry(make_settings(), rows)
            assert isinstance(await reg.get(None), ExtractiveAnswerer)  # no tenant → nothing to look up
            # a stored row not marked default never answers an unnamed turn; builtin-chat is never a row
            assert isinstance(await reg.get(None, tenant_id=1), ExtractiveAnswerer)
            row.is_default = True
            by_default = await reg.get(None, tenant_id=1)
            assert by_default.model_id == row.id
            assert isinstance(await reg.get("builtin-chat", tenant_id=1), ExtractiveAnswerer)
            assert await reg.get(row.id, tenant_id=1) is by_default  # cached client
            resp = await by_default.chat(USER)
            assert resp.content == "hello"
            assert fake.headers[-1]["authorization"] == "Bearer k"
            with pytest.raises(ModelNotConfigured):
                await reg.get("no-such-id", tenant_id=1)
            with pytest.raises(ModelNotConfigured):
                await reg.get(rr.id, tenant_id=1)
            spec = ChatModelRegistry(make_settings(chat_model="ollama:qwen2.5:7b",
                                                   chat_base_url=fake.root_url))
            model = await spec.get(None)
            assert model.model_id == "ollama:qwen2.5:7b"
            rerankers = RerankerRegistry(make_settings(), rows)
            assert await rerankers.get(None) is None
            rr.is_default = True
            assert await rerankers.get(None, tenant_id=1) is None  # reranking only where a model is named
            reranker = await rerankers.get(rr.id, tenant_id=1)
            assert reranker is not None
            assert (await reranker.rerank("a", ["b", "a"]))[0].index == 1
            await reg.close()
            await spec.close()
            await rerankers.close()
