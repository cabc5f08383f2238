"""The quick-answer runner behind the public API: SSE from POST /knowledge-chat with no model configured."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from tests.services.pipeline.conftest import DOCS, add_kb

pytestmark = pytest.mark.integration


async def test_knowledge_chat_streams_a_cited_extractive_answer(plain_container: Any) -> None:
    from knora.api.app import create_app

    c = plain_container
    kb = await add_kb(c, DOCS)
    app = create_app(services=c)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t",
                                 headers={"X-API-Key": "sk-test-key"}, timeout=60) as http:
        session = (await http.post("/api/v1/sessions", json={"title": "t"})).json()["data"]
        frames: list[dict[str, Any]] = []
        async with http.stream("POST", f"/api/v1/knowledge-chat/{session['id']}",
                               json={"query": "How is oolong tea processed?",
                                     "knowledge_base_ids": [kb]}) as r:
            async for line in r.aiter_lines():
                if line.startswith("data:"):
                    frames.append(json.loads(line[5:]))
    kinds = [f["response_type"] for f in frames]
    assert kinds.index("references") < kinds.index("answer")
    assert kinds[-1] in ("complete", "session_title")
    answer = "".join(f["content"] for f in frames if f["response_type"] == "answer")
    assert "No generative model is configured" in answer
    assert "partially oxidised" in answer
    assert "<kb " in answer
    assert "<ref" not in answer  # the streaming handler expanded the handle
