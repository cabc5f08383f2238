"""What one evaluation run compares: the knobs of ``knora eval`` and of ``POST /evaluation``."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, field_validator

from knora.services.retrieval.fusion import FUSIONS


class EvalOptions(BaseModel):
    model_config = {"extra": "forbid"}

    knowledge_base_id: str = ""  # an existing KB to search ('' = a scratch KB, ingested from the corpus)
    keep: bool = False  # keep the scratch KB afterwards
    embedder: str = ""  # embedding model of the scratch KB ('' = the configured default)
    indexing: Literal["passage", "chunked"] = "passage"  # one chunk per passage, or the KB's chunker
    chunk_size: int = Field(default=0, ge=0)  # chunked: the scratch KB's chunk size (0 = the default)
    mode: Literal["hybrid", "vector", "keyword"] = "hybrid"
    fusion: str = ""  # '' = Knora's default (convex)
    match_count: int = Field(default=100, ge=1, le=500)  # results per query that the metrics see
    vector_threshold: float = Field(default=0.0, ge=0.0, le=1.0)
    keyword_threshold: float = Field(default=0.0, ge=0.0, le=1.0)
    rerank_model: str = ""  # rerank the retrieved list with this model ('' = no rerank)
    top_k: int = Field(default=10, ge=1, le=100)  # chunks a quick-answer turn retrieves (embedding_top_k)
    chat_model: str = ""  # answering and judging model ('' = the configured default)
    limit: int = Field(default=0, ge=0)  # evaluate the first N judged queries (0 = all)
    answers: bool = True  # run quick-answer turns where the set has answers
    judge: bool = True  # judge faithfulness when the chat model is generative

    @field_validator("fusion")
    @classmethod
    def _known_fusion(cls, v: str) -> str:
        if v and v not in FUSIONS:
            raise ValueError(f"unknown fusion mode {v!r}; known: {', '.join(sorted(FUSIONS))}")
        return v
