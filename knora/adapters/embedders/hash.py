"""``local:hash`` — a deterministic lexical embedder by feature hashing; no model, instant, used by the tests.

Features: lower-cased word unigrams and bigrams, plus character bigrams (and unigrams) of CJK runs, since
Chinese has no spaces. Each feature is hashed (CRC32, stable across processes unlike ``hash()``) to a signed
bucket; counts are dampened with ``1 + log(tf)``; the vector is L2-normalised. Texts sharing words get high
cosine similarity, unrelated texts near zero — enough for retrieval tests to be meaningful without a neural
model.
"""

from __future__ import annotations

import itertools
import math
import re
import zlib
from collections import Counter

import numpy as np

from knora.adapters.embedders._base import LocalEmbedder

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_CJK_RUN = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+")


def features(text: str) -> Counter[str]:
    """The weighted n-gram features of ``text`` (exposed for tests and for explaining scores)."""
    lowered = text.lower()
    feats: Counter[str] = Counter()
    for run in _CJK_RUN.findall(lowered):
        feats.update(f"c:{ch}" for ch in run)
        feats.update(f"cc:{run[i:i + 2]}" for i in range(len(run) - 1))
    non_cjk = _CJK_RUN.sub(" ", lowered)
    words = _WORD.findall(non_cjk)
    feats.update(f"w:{w}" for w in words)
    feats.update(f"ww:{a} {b}" for a, b in itertools.pairwise(words))
    return feats


class HashEmbedder(LocalEmbedder):
    def __init__(self, dimension: int = 384, batch_size: int = 256) -> None:
        super().__init__("local:hash", dimension, batch_size)

    def _load(self) -> None:
        return None

    def _vector(self, text: str) -> np.ndarray:
        vec = np.zeros(self.dimension, dtype=np.float32)
        for feat, tf in features(text).items():
            h = zlib.crc32(feat.encode("utf-8"))
            sign = 1.0 if (h >> 31) & 1 else -1.0
            weight = 0.5 if feat.startswith(("ww:", "c:")) else 1.0  # bigrams of words / single CJK chars
            vec[h % self.dimension] += sign * weight * (1.0 + math.log(tf))
        return vec

    def _encode(self, texts: list[str], is_query: bool) -> np.ndarray:
        return np.stack([self._vector(t) for t in texts])
