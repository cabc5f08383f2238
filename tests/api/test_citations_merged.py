"""Issue 18, end to end over HTTP: a document cut into short chunks, retrieved and merged into one passage;
the answer's citation names the chunk that holds the quoted sentence (extractive answerer and a model behind
the HTTP fake), and the references carry the map from the passage back to its chunks."""

from __future__ import annotations

import json
import re
from typing import Any

import httpx
import pytest

from tests.conftest import client_for
from tests.fakes import FakeModelServer, Reply
from tests.services.streaming.sse import parse_sse

pytestmark = pytest.mark.integration

MANUAL = ("The Heron pump is built in Oslo by a small team of engineers.\n\n"
          "The Heron pump housing is cast steel with two brass inlets.\n\n"
          "The Heron pump weighs 41 kilograms when it is empty.\n\n"
          "Service for the Heron pump is due every 18 months.\n")
_TAG = re.compile(r'<kb [^>]*chunk_id="([^"]+)"[^>]*/>')


async def _kb_with_manual(http: httpx.AsyncClient, c: Any) -> tuple[str, dict[str, str]]:
    r = await http.post("/api/v1/knowledge-bases", json={
        "name": "Pumps", "chunking_config": {"chunk_size": 100, "chunk_overlap": 20}})
    assert r.status_code == 201, r.text
    kb = r.json()["data"]["id"]
    r = await http.post(f"/api/v1/knowledge-bases/{kb}/knowledge/file",
                        files={"file": ("heron.md", MANUAL.encode())})
    assert r.status_code == 200, r.text
    await c.jobs.wait_idle(60)
    chunks = (await http.get(f"/api/v1/chunks/{r.json()['data']['id']}")).json()["data"]
    assert len(chunks) == 4, chunks  # one chunk per paragraph
    return kb, {ch["id"]: ch["content"] for ch in chunks}


async def _ask(http: httpx.AsyncClient, kb: str, question: str) -> tuple[str, list[dict[str, Any]]]:
    sid = (await http.post("/api/v1/sessions", json={"title": "set"})).json()["data"]["id"]  # no title call
    r = await http.post(f"/api/v1/knowledge-chat/{sid}", json={"query": question, "knowledge_base_ids": [kb]})
    s = parse_sse(r.content)
    return s.answer(), s.of("references")[0]["knowledge_references"]


async def test_extractive_citation_of_a_merged_passage_names_the_chunk_of_the_sentence(
        plain_container: Any) -> None:
    async with client_for(plain_container) as http:
        kb, chunks = await _kb_with_manual(http, plain_container)
        answer, refs = await _ask(http, kb, "How much does the Heron pump weigh?")
        assert "41 kilograms" in answer
        [passage] = [r for r in refs if len(r.get("spans", [])) > 1]  # the paragraphs, merged
        cited = _TAG.findall(answer)
        assert len(cited) == 2
        for m in _TAG.finditer(answer):  # each citation names the chunk of its sentence …
            sentence = answer[:m.start()].split("\n")[-1].strip()
            assert sentence in chunks[m.group(1)], (sentence, m.group(1))
        assert set(cited) - {passage["id"]}  # … not only the chunk the passage is named after
        for span in passage["spans"]:
            assert passage["content"][span["start"]:span["end"]] == chunks[span["chunk_id"]]


async def test_model_citation_of_a_merged_passage_names_the_chunk_of_the_sentence(
        model_container: Any, fake: FakeModelServer) -> None:
    async with client_for(model_container) as http:
        kb, chunks = await _kb_with_manual(http, model_container)
        fake.script([Reply(content=json.dumps({"rewrite_query": "Heron pump service weight",
                                               "intent": "kb_search"})),
                     Reply(content='It weighs 41 kilograms when empty <ref id="c1"/>. Service for the Heron '
                                   'pump is due every 18 months. <ref id="c1"/>', chunk_size=5)])
        answer, refs = await _ask(http, kb, "How heavy is the Heron pump and when is it serviced?")
        cited = _TAG.findall(answer)
        assert len(cited) == 2, answer
        assert "41 kilograms" in chunks[cited[0]]
        assert "every 18 months" in chunks[cited[1]]
        assert all(any(cid in {s["chunk_id"] for s in r.get("spans", [])} for r in refs) for cid in cited)
