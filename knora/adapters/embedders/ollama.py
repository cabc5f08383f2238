"""``ollama:<model>`` — Ollama's native ``POST /api/embed`` (batched ``input``), via httpx.

Ollama loads a model on first request, which can take a while, hence the generous timeout; connection errors
and 5xx/429 replies are retried with backoff.
"""

from __future__ import annotations

from collections.abc import Sequence

import httpx
import numpy as np

from knora.adapters.embedders._base import cap, l2_normalise
from knora.adapters.embedders._http import (
    TRANSIENT_STATUS,
    EmbeddingReplyError,
    refused,
    vectors_from,
    with_retries,
)
from knora.netguard import OutboundPolicy
from knora.ports.embedder import Vector

DEFAULT_BASE_URL = "http://127.0.0.1:11434"


def _transient(exc: BaseException) -> bool:
    if isinstance(exc, httpx.TransportError):
        return True
    return isinstance(exc, httpx.HTTPStatusError) and exc.response.status_code in TRANSIENT_STATUS


class OllamaEmbedder:
    def __init__(self, model: str, *, base_url: str | None = None, dimension: int | None = None,
                 batch_size: int = 32, timeout: float = 120.0, attempts: int = 4,
                 retry_delay: float = 0.5, policy: OutboundPolicy | None = None) -> None:
        """``policy``: the outbound policy every connection is pinned under (the registry always passes one;
        None, for tests and benchmarks, connects directly)."""
        self._model = model
        self._policy = policy
        root = (base_url or DEFAULT_BASE_URL).rstrip("/")
        self._url = (root.removesuffix("/api") if root.endswith("/api") else root) + "/api/embed"
        self._where = f"embedding provider ollama:{model} at {root}"
        self._dimension = dimension or 0
        self._batch_size = max(int(batch_size), 1)
        self._timeout = timeout
        self._attempts = attempts
        self._retry_delay = retry_delay

    @property
    def model_id(self) -> str:
        return f"ollama:{self._model}"

    @property
    def dimension(self) -> int:
        """0 until the first reply unless settings say it."""
        return self._dimension

    async def _batch(self, client: httpx.AsyncClient, texts: list[str]) -> np.ndarray:
        async def call() -> np.ndarray:
            resp = await client.post(self._url, json={"model": self._model, "input": texts})
            resp.raise_for_status()
            try:
                body = resp.json()
            except ValueError as exc:
                raise EmbeddingReplyError(f"{self._where}: answer is not JSON: {resp.text[:120]!r}") from exc
            if not isinstance(body, dict) or "embeddings" not in body:
                raise EmbeddingReplyError(f"{self._where}: unexpected answer, expected an object with "
                                          f"'embeddings', got {resp.text[:120]!r}")
            return vectors_from(body["embeddings"], inputs=len(texts), dimension=self._dimension,
                                provider=self._where)

        return await with_retries(call, _transient, attempts=self._attempts, base_delay=self._retry_delay)

    async def embed_passages(self, texts: Sequence[str]) -> Vector:
        capped = [cap(t) or " " for t in texts]
        if not capped:
            return np.zeros((0, self._dimension), dtype=np.float32)
        transport = self._policy.transport() if self._policy is not None else None
        async with httpx.AsyncClient(timeout=self._timeout, transport=transport) as client:
            try:
                parts = [await self._batch(client, capped[i:i + self._batch_size])
                         for i in range(0, len(capped), self._batch_size)]
            except Exception as exc:
                refusal = refused(exc, self._where)
                if refusal is None:
                    raise
                raise refusal from exc
        out = l2_normalise(np.concatenate(parts, axis=0))
        self._dimension = int(out.shape[1])
        return out

    async def embed_query(self, text: str) -> Vector:
        vectors = await self.embed_passages([text])
        first: Vector = vectors[0]  # a row of the matrix
        return first
