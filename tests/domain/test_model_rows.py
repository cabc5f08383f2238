"""The one model-row resolver: ``ModelConfig.provider`` / ``ModelConfig.spec``."""

from __future__ import annotations

from knora.domain.models import ModelConfig


def row(**kw: object) -> ModelConfig:
    return ModelConfig(tenant_id=1, name="qwen3", type="KnowledgeQA", **kw)  # type: ignore[arg-type]


def test_provider_precedence() -> None:
    both = row(parameters={"provider": "DeepSeek", "interface_type": "ollama"})
    assert both.provider("openai") == "deepseek"
    assert row(parameters={"interface_type": " Ollama "}).provider("openai") == "ollama"
    assert row().provider("jina") == "jina"


def test_spec_carries_endpoint_key_and_row_id() -> None:
    r = row(id="m1", parameters={"interface_type": "vllm", "base_url": "http://gpu:8000/v1"}, api_key="k")
    s = r.spec("openai")
    assert (s.spec, s.base_url, s.api_key) == ("vllm:qwen3", "http://gpu:8000/v1", "k")
    assert s.params["provider"] == "vllm"
    assert s.params["model_id"] == "m1"
    bare = row(id="m2").spec("ollama")
    assert (bare.spec, bare.base_url, bare.api_key) == ("ollama:qwen3", None, None)
