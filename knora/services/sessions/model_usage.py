"""Per-model token usage of a tenant's answers over a time window (WeKnora's ``GET /models/usage``).

What Knora stores: each completed answer keeps the id of the model that answered (``Message.model_id``) and
the token counts its turn's model calls reported (``debug["usage"]``: prompt, completion, total; an agent
turn's calls are summed into it, ``knora.services.agent.usage``). So a row is one model's answers:
``call_count`` counts answers (turns), not individual model calls, and model calls outside an answer (titles,
suggestions, evaluation, embeddings) are not in it. Answers whose model reported no usage (the extractive
answerer, a provider that sends none) are left out. Knora records no cached-token counts and no prices:
``cached_tokens`` and ``cache_hit_rate`` are 0, ``cost`` is 0 and ``currency`` "" — no figure here is
estimated.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from knora.domain.models import ModelConfig


@dataclass
class ModelUsage:
    model_id: str
    calls: int = 0
    prompt: int = 0
    completion: int = 0
    total: int = 0

    def json(self, model: ModelConfig | None) -> dict[str, Any]:
        return {"model_id": self.model_id, "model_name": (model.display_name or model.name) if model else "",
                "model_type": model.type if model else "", "call_count": self.calls,
                "prompt_tokens": self.prompt, "completion_tokens": self.completion,
                "total_tokens": self.total,
                "cached_tokens": 0, "cache_hit_rate": 0.0, "cost": 0.0, "currency": ""}


def _count(usage: Mapping[str, Any], key: str) -> int:
    v = usage.get(key)
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else 0


def aggregate(rows: Sequence[tuple[str, Any]]) -> list[ModelUsage]:
    """Rows of (model id, the answer's ``debug["usage"]``) summed per model, most tokens first."""
    by_model: dict[str, ModelUsage] = {}
    for model_id, usage in rows:
        if not isinstance(usage, Mapping):
            continue
        u = by_model.setdefault(model_id, ModelUsage(model_id))
        prompt, completion = _count(usage, "prompt_tokens"), _count(usage, "completion_tokens")
        u.calls += 1
        u.prompt += prompt
        u.completion += completion
        u.total += _count(usage, "total_tokens") or prompt + completion
    return sorted(by_model.values(), key=lambda u: (-u.total, u.model_id))


def usage_json(rows: Sequence[tuple[str, Any]], models: Sequence[ModelConfig]) -> list[dict[str, Any]]:
    known = {m.id: m for m in models}
    return [u.json(known.get(u.model_id)) for u in aggregate(rows)]
