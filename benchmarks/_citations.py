"""Citation precision for ``benchmarks/pipeline.py`` (issue #18): does the cited chunk hold the cited
sentence?

For each question of a set a quick-answer turn runs end to end (real container, retrieval and merge), the
answer's ``<ref id="cN"/>`` marks are decoded to public ``<kb chunk_id=…/>`` tags as the UI receives them,
and each tag is checked against the text of the chunk it names (whitespace ignored):

- ``extractive``: the local answerer; the cited sentence is the last sentence before the tag (it quotes
  verbatim). ``whole_quote`` also asks that the whole quoted unit (all text since the previous tag or blank
  line: the answerer may quote two adjacent sentences) is in the cited chunk.
- ``fake_model``: a model behind the HTTP fake of tests/fakes, answering as a model does: the best sentence
  quoted with a mark after it, then the second best paraphrased ("Also, …"; Chinese "此外，…") with the mark
  before the final full stop. The fake records the passage sentence behind each claim; a tag is precise when
  its chunk holds that sentence.

``before`` is the same tags as they were cited before issue #18: under the merged passage's first chunk
(``ReferenceRegistry.resolve``), measured in the same turns. Corpora: each set as it is (one passage = one
chunk, so merging is rare) and ``multi``: four consecutive passages per document, cut by Knora's chunker with
its defaults (512 / 80), so neighbouring chunks are merged into one passage.
"""

from __future__ import annotations

import itertools
import json
import re
import shutil
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from knora.adapters.db.repos._mapping import to_row
from knora.adapters.db.tables import ChunkRow, KnowledgeBaseRow, KnowledgeRow
from knora.adapters.llm.extractive import passages_from_messages, rank_sentences
from knora.domain.knowledge import Chunk, ChunkingConfig, Knowledge, KnowledgeBase, ParseStatus
from knora.domain.search import IndexRow
from knora.ports.chat import ChatMessage
from knora.ports.turn import TurnContext, TurnRequest
from knora.root import Services, build_services
from knora.services.citations.pinpoint import cited_sentence
from knora.services.citations.registry import ReferenceRegistry
from knora.services.ingest.chunker import split_document
from knora.services.streaming.bus import EventBus
from knora.settings import Settings
from tests.fakes.model_server import FakeModelServer, Reply

_REF = re.compile(r'<ref id="(c\d+)"/>')
_KB = re.compile(r'<kb\s[^>]*chunk_id="([^"]+)"[^>]*/>')
_WS = re.compile(r"[\s*_`]+")  # white space and Markdown decoration are not compared
_CJK = re.compile(r"[\u3400-\u9fff]")
PER_DOCUMENT = 4


def _flat(s: str) -> str:
    return _WS.sub("", s)


def documents(corpus: list[dict[str, Any]], multi: bool) -> list[tuple[str, list[tuple[str, int, int]]]]:
    """(title, [(content, start, end)]) per document: each passage alone, or four per document chunked."""
    if not multi:
        return [(d.get("title", ""), [(d["text"], 0, len(d["text"]))]) for d in corpus]
    out = []
    for n in range(0, len(corpus), PER_DOCUMENT):
        text = "\n\n".join(d["text"] for d in corpus[n:n + PER_DOCUMENT])
        drafts = split_document(text, ChunkingConfig())
        out.append((f"Document {n // PER_DOCUMENT}", [(d.content, d.start_at, d.end_at) for d in drafts]))
    return out


async def seed_chunks(c: Services, docs: list[tuple[str, list[tuple[str, int, int]]]]
                      ) -> tuple[str, list[Chunk]]:
    """One KB of linked chunks (pre/next like the chunker links them; each part is its text and offsets),
    written and indexed in batches; returns the KB id and the chunks. benchmarks/pipeline.py seeds with it
    too."""
    tenant = c.default_tenant_id
    kb = KnowledgeBase(tenant_id=tenant, name=f"bench-{uuid.uuid4().hex[:6]}")
    async with c.sessions.begin() as s:
        s.add(to_row(KnowledgeBaseRow, kb))
    ks: list[Knowledge] = []
    chunks: list[Chunk] = []
    for title, parts in docs:
        k = Knowledge(tenant_id=tenant, knowledge_base_id=kb.id, title=title,
                      parse_status=ParseStatus.COMPLETED)
        ks.append(k)
        mine = [Chunk(tenant_id=tenant, knowledge_base_id=kb.id, knowledge_id=k.id, content=p, chunk_index=i,
                      start_at=start, end_at=end) for i, (p, start, end) in enumerate(parts)]
        for a, b in itertools.pairwise(mine):
            a.next_chunk_id, b.pre_chunk_id = b.id, a.id
        chunks.extend(mine)
    titles = {k.id: k.title for k in ks}
    for i in range(0, len(ks), 2000):
        async with c.sessions.begin() as s:
            s.add_all([to_row(KnowledgeRow, k) for k in ks[i : i + 2000]])
    for i in range(0, len(chunks), 5000):
        part = chunks[i : i + 5000]
        async with c.sessions.begin() as s:
            s.add_all([to_row(ChunkRow, ch) for ch in part])
        texts = [ch.index_content(titles[ch.knowledge_id]) for ch in part]
        vecs = await c.embedders.default.embed_passages(texts)
        await c.retrieval.index([IndexRow(source_id=ch.id, chunk_id=ch.id, knowledge_id=ch.knowledge_id,
                                          knowledge_base_id=kb.id, tenant_id=tenant, content=t,
                                          embedding=vecs[j].tolist())
                                 for j, (ch, t) in enumerate(zip(part, texts, strict=True))])
    return kb.id, chunks


async def seed(c: Services, docs: list[tuple[str, list[tuple[str, int, int]]]]) -> tuple[str, dict[str, str]]:
    """``seed_chunks``, returning the KB id and chunk id → text."""
    kb_id, chunks = await seed_chunks(c, docs)
    return kb_id, {ch.id: ch.content for ch in chunks}


def _question(user: str) -> str:
    """The user's question in a request: after "Latest message:" (query rewrite), else the last line."""
    if "Latest message:\n" in user:
        return user.split("Latest message:\n", 1)[1].split("\n\n", 1)[0].strip()
    lines = [ln for ln in user.strip().splitlines() if ln.strip()]
    return lines[-1].strip() if lines else ""


class ModelLike:
    """The fake server's handler: a rewrite for the query-understanding call, else a cited answer."""

    def __init__(self) -> None:
        self.claims: list[list[str]] = []  # per answer: the passage sentence behind each mark, in order

    def __call__(self, body: dict[str, Any]) -> Reply:
        messages = [ChatMessage(role=m["role"], content=m.get("content") or "") for m in body["messages"]]
        passages = passages_from_messages(messages)
        question = _question(next((m.content for m in reversed(messages) if m.role == "user"), ""))
        if not passages:
            return Reply(content=json.dumps({"rewrite_query": question, "intent": "kb_search"}))
        picks = [p for p in rank_sentences(question, passages) if p.order[2] == 1][:2]
        self.claims.append([p.sentence for p in picks])
        if not picks:
            return Reply(content="I could not find that in the documents.", chunk_size=16)
        text = f'{picks[0].sentence} <ref id="{picks[0].handle}"/>'
        if len(picks) > 1:
            second = picks[1].sentence.rstrip("。.!?！？")
            if _CJK.search(second):
                text += f'此外，{second} <ref id="{picks[1].handle}"/>。'
            else:
                text += f' Also, {second[:1].lower()}{second[1:]} <ref id="{picks[1].handle}"/>.'
        return Reply(content=text, chunk_size=16)


COUNTS = ("tags", "precise", "precise_before", "whole_quote", "merged", "straddling", "straddling_most")


def _score(public: str, raw: str, refs: ReferenceRegistry, chunks: dict[str, str],
           claims: list[str] | None) -> dict[str, int]:
    """Counts for one answer: tags, precise now, precise before, whole quotes, tags of merged passages, and
    tags whose sentence no chunk holds whole (the chunker cut it: ``straddling``; ``straddling_most``: the
    cited chunk holds the larger part of it). ``chunks``: chunk id → text as ``_flat`` leaves it."""
    tags = list(_KB.finditer(public))
    olds = [(refs.resolve(m.group(1)) or {}).get("id", "") for m in _REF.finditer(raw)]
    got = dict.fromkeys(COUNTS, 0)
    if len(olds) != len(tags):
        return got  # a mark that did not decode (never seen): the answer is left out
    prev_end = 0
    for n, (m, old) in enumerate(zip(tags, olds, strict=True)):
        segment = public[prev_end:m.start()]
        prev_end = m.end()
        if claims is not None:
            sentence = claims[n] if n < len(claims) else ""
        else:
            sentence = cited_sentence(public[:m.start()])
        quote = _KB.sub("", segment.split("\n\n")[-1]).strip()
        new, flat = m.group(1), _flat(sentence)
        got["tags"] += 1
        got["merged"] += new != old
        got["precise"] += bool(flat) and flat in chunks.get(new, "")
        got["precise_before"] += bool(flat) and flat in chunks.get(old, "")
        got["whole_quote"] += bool(quote) and _flat(quote) in chunks.get(new, "")
        if flat and not any(flat in text for text in chunks.values()):
            got["straddling"] += 1
            got["straddling_most"] += _held(flat, chunks.get(new, "")) * 2 > len(flat)
    return got


def _held(flat: str, chunk: str) -> int:
    """How much of ``flat`` the chunk holds: its longest prefix ending the chunk or suffix starting it."""
    best = 0
    for k in range(len(flat), 0, -1):
        if chunk.endswith(flat[:k]) or chunk.startswith(flat[-k:]):
            best = k
            break
    return best


async def precision(name: str, queries: list[dict[str, Any]], corpus: list[dict[str, Any]], embedder: str,
                    turn: Callable[[Services, str, str], TurnRequest]) -> dict[str, Any]:
    """Both arms on both corpora of one set."""
    out: dict[str, Any] = {"questions": len(queries)}
    with FakeModelServer() as fake:
        model = ModelLike()
        fake.handler = model
        for arm, extra in (("extractive", {}), ("fake_model", {"chat_model": "openai:fake-chat",
                                                               "chat_base_url": fake.base_url,
                                                               "chat_api_key": "x"})):
            for layout in ("single", "multi"):
                c = await build_services(Settings(data_dir=Path(tempfile.mkdtemp(prefix="knora-cite-")),
                                                  embedder=embedder, sample_kb=False, api_key="sk-bench",
                                                  **extra))
                try:
                    kb_id, texts = await seed(c, documents(corpus, layout == "multi"))
                    chunks = {cid: _flat(t) for cid, t in texts.items()}
                    total = dict.fromkeys(COUNTS, 0)
                    for q in queries:
                        refs = ReferenceRegistry(True)
                        model.claims.clear()
                        outcome = await c.quick_answer.run(turn(c, q["text"], kb_id),  # type: ignore[attr-defined]
                                                           TurnContext(bus=EventBus(), references=refs))
                        claims = model.claims[-1] if arm == "fake_model" and model.claims else None
                        if arm == "fake_model" and claims is None:
                            continue
                        for k, v in _score(refs.decode_output(outcome.answer), outcome.answer, refs, chunks,
                                           claims).items():
                            total[k] += v
                    n = total["tags"] or 1
                    whole = (total["tags"] - total["straddling"]) or 1
                    res = {"chunks": len(chunks), "tags": total["tags"],
                           "tags_of_merged_passages_moved": total["merged"],
                           "precision": round(total["precise"] / n, 4),
                           "precision_before": round(total["precise_before"] / n, 4),
                           # the sentence is in some chunk whole (the rest: the chunker cut it in two)
                           "precision_where_one_chunk_holds_it": round(total["precise"] / whole, 4),
                           "precision_before_where_one_chunk_holds_it": round(total["precise_before"] / whole,
                                                                              4),
                           "tags_whose_sentence_two_chunks_share": total["straddling"],
                           "of_which_cited_chunk_holds_most": total["straddling_most"]}
                    if arm == "extractive":
                        res["whole_quote_in_cited_chunk"] = round(total["whole_quote"] / n, 4)
                    out[f"{arm}/{layout}"] = res
                finally:
                    await c.aclose()
                    shutil.rmtree(c.settings.data_dir, ignore_errors=True)
    return out
