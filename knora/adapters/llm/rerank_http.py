"""HTTP rerank services: Jina / Cohere / SiliconFlow / vLLM (``POST {base}/rerank`` with ``documents``) and
Hugging Face TEI (``POST {base}/rerank`` with ``texts``).

Responses come in two shapes — ``{"results": [{"index", "relevance_score"}]}`` and a bare list of
``{"index", "score"}`` — and both are accepted whatever was asked for. Scores are returned sorted best first:
WeKnora assumes the provider sorted (spec §2.9) and most do, but not all, so the client sorts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import httpx

from knora.ports.chat import ModelError
from knora.ports.reranker import RerankScore

Style = Literal["jina", "cohere", "tei"]


def parse_rerank_response(body: Any) -> list[RerankScore]:
    rows = body.get("results", body.get("data", [])) if isinstance(body, dict) else body
    scores: list[RerankScore] = []
    for row in rows or []:
        if not isinstance(row, dict) or "index" not in row:
            continue
        value = row.get("relevance_score", row.get("score"))
        if value is None:
            continue
        scores.append(RerankScore(index=int(row["index"]), score=float(value)))
    scores.sort(key=lambda s: (-s.score, s.index))
    return scores


class HttpReranker:
    def __init__(self, model: str, *, base_url: str, api_key: str | None = None, model_id: str | None = None,
                 style: Style = "jina", timeout: float = 30.0,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        self._model = model
        self._model_id = model_id or f"rerank:{model}"
        self._style = style
        base = base_url.rstrip("/")
        self._url = base if base.endswith("/rerank") else f"{base}/rerank"
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.AsyncClient(timeout=timeout, headers=headers, transport=transport)

    @property
    def model_id(self) -> str:
        return self._model_id

    async def close(self) -> None:
        await self._http.aclose()

    def _body(self, query: str, documents: Sequence[str], top_n: int | None) -> dict[str, Any]:
        if self._style == "tei":
            return {"query": query, "texts": list(documents), "raw_scores": False, "truncate": True}
        body: dict[str, Any] = {"model": self._model, "query": query, "documents": list(documents),
                                "return_documents": False}
        if top_n:
            body["top_n"] = top_n
        return body

    async def rerank(self, query: str, documents: Sequence[str],
                     top_n: int | None = None) -> list[RerankScore]:
        if not documents:
            return []
        try:
            resp = await self._http.post(self._url, json=self._body(query, documents, top_n))
        except httpx.HTTPError as exc:
            raise ModelError(f"rerank unreachable: {exc}", transient=True) from exc
        if resp.status_code >= 400:
            status = resp.status_code
            raise ModelError(f"rerank error {status}: {resp.text[:200]}",
                             transient=status == 429 or status >= 500,
                             status=status)
        scores = [s for s in parse_rerank_response(resp.json()) if 0 <= s.index < len(documents)]
        return scores[:top_n] if top_n else scores
