"""The local extractive answerer: a ``ChatModel`` that needs no model at all.

Why it exists: Knora must answer usefully the moment it is installed, with no API key. Given the passages the
pipeline retrieved (``ChatOptions.extra["passages"]`` = ``[{"handle": "c1", "content": …}]``, or — for callers
that only have messages — the ``<chunk id="cN">…<content>…</content>`` XML the pipeline renders), it picks the
sentences that best answer the question, cites each with ``<ref id="cN"/>`` and says plainly that no
generative model is configured, so nobody mistakes quoted sentences for a model's answer.

Sentence score = IDF-weighted query-term coverage (words with stemming for Latin script; jieba words plus
character bigrams for Chinese) + a proximity bonus (how tightly the matched terms cluster) + a small prior for
the passage's retrieval rank.
"""

from __future__ import annotations

import html
import itertools
import math
import re
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

from knora.ports.chat import ChatChunk, ChatMessage, ChatOptions, ChatResponse, Usage

EXTRACTIVE_MODEL_ID = "local:extractive"

_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_WORD = re.compile(r"[a-z0-9]+(?:['’][a-z]+)?")
_SENT_SPLIT = re.compile(r"(?<=[.!?;。！？；])\s+|(?<=[。！？；])|\n+")
_CHUNK_XML = re.compile(r'<chunk\s+id="(c\d+)"[^>]*>(.*?)</chunk>', re.DOTALL)
_CONTENT_XML = re.compile(r"<(?:content|match)>(.*?)</(?:content|match)>", re.DOTALL)
_STOP_EN = frozenset(
    ["a", "an", "the", "is", "are", "was", "were", "be", "been", "being", "have", "has", "had", "do", "does",
     "did", "will", "would", "could", "should", "may", "might", "must", "can", "to", "of", "in", "for", "on",
     "with", "at", "by", "from", "as", "into", "through", "about", "what", "how", "why", "when", "where",
     "which", "who", "whom", "whose", "that", "this", "these", "those", "it", "its", "and", "or", "not", "no",
     "but", "if", "than", "then", "so", "such", "there", "their", "they", "them", "he", "she", "his", "her",
     "we", "you", "your", "i", "me", "my", "our", "us"]
)
_STOP_ZH = frozenset(["的", "了", "是", "在", "和", "与", "或", "及", "吗", "呢", "什么", "哪些", "哪个",
                      "怎么", "如何", "为什么", "多少", "几", "谁", "一个", "这个", "那个", "请问", "有"])

NO_MODEL_EN = ("No generative model is configured, so this answer quotes the most relevant sentences from "
               "your documents.")
NO_MODEL_ZH = "未配置生成式模型，以下直接引用知识库中与问题最相关的原文句子。"
NOTHING_EN = ("No generative model is configured and no retrieved passage matches this question, so I "
              "cannot answer it. Configure a chat model (KNORA_CHAT_MODEL or a KnowledgeQA model) for open "
              "conversation.")
NOTHING_ZH = ("未配置生成式模型，且没有检索到与问题相关的内容，因此无法回答。"
              "配置对话模型后即可进行开放式对话。")


def is_cjk(text: str) -> bool:
    return bool(_CJK.search(text))


_stemmer: Any = None


def _stem(word: str) -> str:
    global _stemmer
    if _stemmer is None:
        import snowballstemmer

        _stemmer = snowballstemmer.stemmer("english")
    return str(_stemmer.stemWord(word))


def terms(text: str) -> list[str]:
    """Positional term list: stemmed Latin words, jieba words and bigrams for Han runs (stopwords dropped)."""
    lowered = text.lower()
    out: list[str] = []
    for piece in re.split(r"([\u3400-\u9fff\uf900-\ufaff]+)", lowered):
        if not piece:
            continue
        if _CJK.match(piece):
            import jieba

            for word in jieba.cut(piece, HMM=True):
                if word not in _STOP_ZH and len(word) > 1:
                    out.append(word)
            out.extend(piece[i : i + 2] for i in range(len(piece) - 1))
            if len(piece) == 1 and piece not in _STOP_ZH:
                out.append(piece)
        else:
            out.extend(_stem(w) for w in _WORD.findall(piece) if w not in _STOP_EN)
    return out


def split_sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENT_SPLIT.split(_table_rows_as_sentences(text)) if s and len(s.strip()) > 1]


_CELL_SPLIT = re.compile(r"(?<!\\)\|")
_SEPARATOR_CELL = re.compile(r":?-{3,}:?")


def _cells(line: str) -> list[str] | None:
    s = line.strip()
    if len(s) < 2 or not (s.startswith("|") and s.endswith("|")):
        return None
    return [c.strip().replace("\\|", "|") for c in _CELL_SPLIT.split(s[1:-1])]


def _table_rows_as_sentences(text: str) -> str:
    """Markdown table rows (parsers render tables so) as sentences that carry their header: "| Leeds | 41 |"
    under "| Warehouse | Shortfall |" reads "Warehouse: Leeds, Shortfall: 41", so a question naming a column
    finds the row with the value, not the header row alone."""
    if "|" not in text:
        return text
    lines = text.split("\n")
    out: list[str] = []
    header: list[str] | None = None
    for i, line in enumerate(lines):
        cells = _cells(line)
        if cells is None:
            header = None
            out.append(line)
            continue
        if header is None:
            following = _cells(lines[i + 1]) if i + 1 < len(lines) else None
            if following and all(_SEPARATOR_CELL.fullmatch(c) for c in following if c):
                header = cells  # folded into every row below instead of quoted alone
                continue
            out.append(line)
            continue
        if all(_SEPARATOR_CELL.fullmatch(c) for c in cells if c):
            continue
        out.append(", ".join(f"{h}: {v}" if h else v for h, v in zip(header, cells, strict=False) if v))
    return "\n".join(out)


@dataclass
class Passage:
    handle: str
    content: str
    rank: int
    chunk_spans: tuple[tuple[int, int], ...] = ()  # a merged passage: where each source chunk is in content


@dataclass
class Pick:
    sentence: str
    handle: str
    score: float
    order: tuple[int, int, int]  # (passage rank, first sentence, sentence count)


def passages_from_messages(messages: Sequence[ChatMessage]) -> list[Passage]:
    found: list[Passage] = []
    for m in messages:
        for handle, body in _CHUNK_XML.findall(m.content):
            parts = _CONTENT_XML.findall(body)
            text = html.unescape(parts[-1] if parts else re.sub(r"<[^>]+>", " ", body))
            found.append(Passage(handle=handle, content=text, rank=len(found)))
    return found


_YEAR = re.compile(r"\b(1[0-9]{3}|20[0-9]{2})\b|\b(january|february|march|april|may|june|july|august|"
                   r"september|october|november|december)\b|[0-9]+\s*年|[0-9]+月")
_NUMBER = re.compile(r"[0-9]|\b(one|two|three|four|five|six|seven|eight|nine|ten|hundred|thousand|million|"
                     r"billion)\b|[一二三四五六七八九十百千万亿两]")
_NAME = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z]+")


def _answer_type_bonus(query: str, unit: str) -> float:
    """A light preference for units holding the kind of thing the question asks for (date, number, name)."""
    q = query.lower()
    if re.search(r"\bwhen\b|what year|which year|何时|什么时候|哪一年|哪年", q):
        return 0.1 if _YEAR.search(unit.lower()) else 0.0
    if re.search(r"how many|how much|how long|how old|what percentage|多少|几|多长|多大|多久", q):
        return 0.1 if _NUMBER.search(unit.lower()) else 0.0
    if re.search(r"\bwho\b|\bwhom\b|谁", q):
        q_words = set(re.findall(r"[a-z]+", q))
        return 0.1 if any(m.group(0).lower() not in q_words for m in _NAME.finditer(unit)) else 0.0
    return 0.0


@dataclass
class _Unit:
    passage: Passage
    first: int  # index of the first sentence in the passage
    sentences: list[str]
    terms: list[str]


def rank_sentences(query: str, passages: Sequence[Passage]) -> list[Pick]:
    """Score single sentences and adjacent pairs (an answer often sits in the sentence after the one naming
    the subject: "The tower is in Paris. It was completed in 1889.")."""
    q_terms = list(dict.fromkeys(terms(query)))
    if not q_terms:
        return []
    singles: list[_Unit] = []
    for p in passages:
        for i, s in enumerate(split_sentences(p.content)):
            singles.append(_Unit(p, i, [s], terms(s)))
    if not singles:
        return []
    n = len(singles)
    df = {t: sum(1 for u in singles if t in u.terms) for t in q_terms}
    idf = {t: math.log(1 + (n + 1) / (df[t] + 0.5)) for t in q_terms}
    total_idf = sum(idf.values()) or 1.0
    units = list(singles)
    for a, b in itertools.pairwise(singles):
        if a.passage is b.passage:
            units.append(_Unit(a.passage, a.first, [*a.sentences, *b.sentences], [*a.terms, *b.terms]))
    picks: list[Pick] = []
    for u in units:
        present = [t for t in q_terms if t in u.terms]
        if not present:
            continue
        coverage = sum(idf[t] for t in present) / total_idf
        positions = sorted(j for j, t in enumerate(u.terms) if t in present)
        window = (positions[-1] - positions[0] + 1) if len(positions) > 1 else 1
        proximity = min(1.0, len(set(present)) / window) if len(present) > 1 else 0.0
        text = " ".join(u.sentences) if not is_cjk(u.sentences[0]) else "".join(u.sentences)
        score = coverage + 0.15 * proximity + 0.05 / (1 + u.passage.rank) + _answer_type_bonus(query, text)
        if len(u.sentences) > 1:
            score -= 0.08  # a pair must earn its extra length
        picks.append(Pick(sentence=text, handle=u.passage.handle, score=score,
                          order=(u.passage.rank, u.first, len(u.sentences))))
    picks.sort(key=lambda k: (-k.score, k.order))
    return picks


def compose_answer(query: str, passages: Sequence[Passage], max_sentences: int = 2,
                   relative_floor: float = 0.6) -> str:
    zh = is_cjk(query)
    picks = rank_sentences(query, passages)
    if not picks:
        return NOTHING_ZH if zh else NOTHING_EN
    best = picks[0].score
    chosen: list[Pick] = []
    used: set[tuple[int, int]] = set()
    for p in picks:
        if len(chosen) >= max_sentences or p.score < best * relative_floor:
            break
        span = {(p.order[0], p.order[1] + k) for k in range(p.order[2])}
        if span & used:
            continue  # never quote a sentence twice
        chosen.append(p)
        used |= span
    chosen.sort(key=lambda p: p.order)  # read in document order
    by_handle = {p.handle: p for p in passages}
    lines = [cite_quote(p, by_handle.get(p.handle)) for p in chosen]
    return (NO_MODEL_ZH if zh else NO_MODEL_EN) + "\n\n" + "\n\n".join(lines)


def parse_chunk_spans(raw: str) -> tuple[tuple[int, int], ...]:
    """``"0-512,430-900"`` (the pipeline's ``spans`` of a merged passage) → ((0, 512), (430, 900))."""
    out: list[tuple[int, int]] = []
    for part in raw.split(","):
        a, sep, b = part.partition("-")
        if sep and a.strip().isdigit() and b.strip().isdigit():
            out.append((int(a), int(b)))
    return tuple(out)


def cite_quote(pick: Pick, passage: Passage | None) -> str:
    """The quoted unit and its mark. The pipeline names the source chunk of a merged passage by the sentence
    a mark follows, so a quote of two sentences that no one chunk holds both of gets a mark after each."""
    mark = f'<ref id="{pick.handle}"/>'
    if passage is None or len(passage.chunk_spans) < 2:
        return f"{pick.sentence} {mark}"
    sentences = split_sentences(pick.sentence)
    places = [(at, at + len(s)) for s in sentences if (at := passage.content.find(s)) >= 0]
    if len(sentences) < 2 or len(places) != len(sentences) or any(
            a <= places[0][0] and places[-1][1] <= b for a, b in passage.chunk_spans):
        return f"{pick.sentence} {mark}"
    joiner = "" if is_cjk(pick.sentence) else " "
    return joiner.join(f"{s} {mark}" for s in sentences)


def _pieces(text: str, size: int = 12) -> list[str]:
    """Small deltas, never splitting a ``<ref …/>`` tag (so every consumer sees whole marks)."""
    tokens = re.findall(r'<ref id="[^"]+"/>|\s+|[^\s<]+|<', text)
    out: list[str] = []
    buf = ""
    for tok in tokens:
        if tok.startswith("<ref") or len(buf) + len(tok) > size:
            if buf:
                out.append(buf)
            buf = ""
            if tok.startswith("<ref"):
                out.append(tok)
                continue
        buf += tok
    if buf:
        out.append(buf)
    return out


class ExtractiveAnswerer:
    """ChatModel-compatible; ``generative = False`` tells the pipeline not to ask it to rewrite queries."""

    generative = False

    def __init__(self, *, max_sentences: int = 2, delta_chars: int = 12) -> None:
        self._max_sentences = max_sentences
        self._delta_chars = delta_chars

    @property
    def model_id(self) -> str:
        return EXTRACTIVE_MODEL_ID

    @property
    def supports_tools(self) -> bool:
        return False

    def _answer(self, messages: Sequence[ChatMessage], options: ChatOptions | None) -> str:
        opts = options or ChatOptions()
        users = [m.content for m in messages if m.role == "user"]
        query = str(opts.extra.get("query") or (users[-1] if users else ""))
        if opts.extra.get("purpose") == "session_title":
            return re.sub(r"\s+", " ", query).strip()[:30]
        raw = opts.extra.get("passages")
        if raw is not None:
            passages = [Passage(handle=str(p.get("handle", "")), content=str(p.get("content", "")), rank=i,
                                chunk_spans=parse_chunk_spans(str(p.get("spans") or "")))
                        for i, p in enumerate(raw) if p.get("handle")]
        else:
            passages = passages_from_messages(messages)
        return compose_answer(query, passages, self._max_sentences)

    async def chat(self, messages: Sequence[ChatMessage], options: ChatOptions | None = None) -> ChatResponse:
        text = self._answer(messages, options)
        return ChatResponse(content=text, finish_reason="stop", usage=Usage(completion_tokens=len(text)))

    async def stream(self, messages: Sequence[ChatMessage],
                     options: ChatOptions | None = None) -> AsyncIterator[ChatChunk]:
        text = self._answer(messages, options)
        for piece in _pieces(text, self._delta_chars):
            yield ChatChunk(content=piece)
        yield ChatChunk(finish_reason="stop", usage=Usage(completion_tokens=len(text),
                                                          total_tokens=len(text)))
