"""Shared bits of the HTTP embedders: retry policy and vector assembly.

An embedding endpoint that answers garbage (an HTML error page, a JSON string, vectors of the wrong length)
must end an ingestion with a reason that names the provider and what was wrong — not with an
``AttributeError`` from deep inside the client — so every reply goes through :func:`vectors_from`.
"""

from __future__ import annotations

import asyncio
import math
import random
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import numpy as np

from knora.netguard import AddressRefused
from knora.ports.chat import ModelError

T = TypeVar("T")

TRANSIENT_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})


async def with_retries(call: Callable[[], Awaitable[T]], is_transient: Callable[[BaseException], bool],
                       attempts: int = 4, base_delay: float = 0.5, max_delay: float = 8.0) -> T:
    """Retry ``call`` on transient errors with exponential backoff and jitter; other errors propagate at
    once."""
    for attempt in range(attempts):
        try:
            return await call()
        except Exception as exc:
            if attempt == attempts - 1 or not is_transient(exc):
                raise
            delay = min(max_delay, base_delay * (2 ** attempt)) * (0.5 + random.random() / 2)
            await asyncio.sleep(delay)
    raise AssertionError("unreachable")  # pragma: no cover


class EmbeddingReplyError(ModelError):
    """The embedding endpoint answered, but not with usable vectors (never transient: retrying the same
    request gets the same garbage)."""


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def vectors_from(rows: Any, *, inputs: int, dimension: int, provider: str) -> np.ndarray:
    """``rows`` (one list of numbers per input, in input order) → a float32 matrix, or EmbeddingReplyError
    saying what was wrong: not a list, a wrong count, a non-numeric or non-finite value, an empty vector,
    vectors of different lengths, or a length other than ``dimension`` (0: not yet known)."""
    if not isinstance(rows, list):
        raise EmbeddingReplyError(f"{provider}: unexpected answer, expected a list of vectors, got "
                                  f"{type(rows).__name__} {_shown(rows)}")
    if len(rows) != inputs:
        raise EmbeddingReplyError(f"{provider}: returned {len(rows)} vectors for {inputs} inputs")
    for i, row in enumerate(rows):
        if not isinstance(row, list) or not row:
            raise EmbeddingReplyError(f"{provider}: vector {i} is not a non-empty list of numbers: "
                                      f"{_shown(row)}")
        if not all(isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x) for x in row):
            raise EmbeddingReplyError(f"{provider}: vector {i} holds a value that is not a finite number")
    lengths = {len(row) for row in rows}
    if len(lengths) > 1:
        raise EmbeddingReplyError(f"{provider}: vectors of different lengths {sorted(lengths)}")
    found = lengths.pop()
    if dimension and found != dimension:
        raise EmbeddingReplyError(f"{provider}: wrong dimension, expected {dimension}, got {found}")
    return np.asarray(rows, dtype=np.float32)


def refused(exc: BaseException, provider: str) -> ModelError | None:
    """The outbound policy's refusal inside ``exc`` (raised by the pinned transport, possibly wrapped by a
    client library) as a final ModelError, or None."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, AddressRefused):
            return ModelError(f"{provider}: {seen}", transient=False)
        seen = seen.__cause__
    return None
