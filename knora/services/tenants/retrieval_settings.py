"""The tenant's retrieval settings as WeKnora's settings page writes them
(``PUT /tenants/kv/retrieval-config``).

Each value is checked for its type and range before it is stored, so that a search never meets a setting
it cannot use; ``null`` means "not sent" and leaves the stored value. The knobs of ``RetrievalConfig`` take
effect in every search of the tenant, on top of each knowledge base's own (``knora.services.retrieval``).
``rerank_model_id`` and the feedback switches are WeKnora's page fields: stored and given back so the page
shows what was saved, and ``rerank_model_id`` must name one of the tenant's rerank models (or be empty).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from knora.domain.errors import BadRequest
from knora.ports.store import ModelRepo
from knora.services.retrieval.fusion import FUSIONS

_COUNTS = {"embedding_top_k": 1000, "rerank_top_k": 1000, "rrf_k": 10_000}
_FRACTIONS = ("vector_threshold", "keyword_threshold", "rerank_threshold", "vector_weight",
              "keyword_weight", "convex_alpha")
_SWITCHES = ("feedback_retrieval_weight_enabled", "feedback_enabled",
             "feedback_retrieval_weight_globally_enabled")


def _count(name: str, value: object, most: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
        raise BadRequest(f"{name} must be a whole number")
    if not 1 <= int(value) <= most:
        raise BadRequest(f"{name} must be between 1 and {most}")
    return int(value)


def _fraction(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        raise BadRequest(f"{name} must be a number")
    if not 0.0 <= float(value) <= 1.0:
        raise BadRequest(f"{name} must be between 0 and 1")
    return float(value)


async def validated(tenant_id: int, body: Mapping[str, object], models: ModelRepo) -> dict[str, object]:
    """The settings ``body`` sets, checked; keys Knora does not know are left out."""
    out: dict[str, object] = {}
    for name, value in body.items():
        if value is None:
            continue
        if name in _COUNTS:
            out[name] = _count(name, value, _COUNTS[name])
        elif name in _FRACTIONS:
            out[name] = _fraction(name, value)
        elif name in _SWITCHES:
            if not isinstance(value, bool):
                raise BadRequest(f"{name} must be true or false")
            out[name] = value
        elif name == "fusion":
            if not isinstance(value, str) or (value and value not in FUSIONS):
                raise BadRequest(f"fusion must be one of {', '.join(sorted(FUSIONS))}")
            out[name] = value or None
        elif name == "rerank_model_id":
            if not isinstance(value, str):
                raise BadRequest("rerank_model_id must be a string")
            if value:
                row = await models.get(tenant_id, value)
                if row is None or row.type != "Rerank":
                    raise BadRequest(f"rerank_model_id {value!r} is not one of this tenant's rerank models")
            out[name] = value
    return out
