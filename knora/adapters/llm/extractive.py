"""The local extractive answerer: a ``ChatModel`` that needs no model at all.

Why it exists: Knora must answer usefully the moment it is installed, with no API key. Given the passages the
pipeline retrieved (``ChatOptions.extra["passages"]`` = ``[{"handle": "c1", "content": …}]``, or — for callers
that only have messages — the ``<chunk id="cN">…<content>…</content>`` XML the pipeline renders), it picks the
sentences that best answer the question, cites each with ``<ref id="cN"/>`` and says plainly that no
generative model is configured, so nobody mistakes quoted sentences for a model's answer.
Only whole sentences are quoted: headings, running headers and footers, page numbers and fragments the chunker
cut are left out (``extractive_sentences``). Sentence score = IDF-weighted query-term coverage (words with
stemming for Latin script; jieba words plus character bigrams for Chinese) + a proximity bonus (how tightly
the matched terms cluster) + a small prior for the passage's retrieval rank + a bonus when the sentence holds
the kind of answer the question asks for (``extractive_types``: a name for who, a date for when, a number for
how many, a place for where, "X is …" for what is X). When no passage holds at least a third of the
question's content words (``RELEVANCE_FLOOR``), the answer says the documents found do not answer the
question instead of quoting something unrelated.
"""

from __future__ import annotations

import html
import itertools
import math
import re
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

from knora.adapters.llm.extractive_sentences import Sentence, quotable_sentences, split_sentences
from knora.adapters.llm.extractive_types import question_type, type_bonus
from knora.ports.chat import ChatChunk, ChatMessage, ChatOptions, ChatResponse, Usage

__all__ = ["EXTRACTIVE_MODEL_ID", "ExtractiveAnswerer", "Passage", "Pick", "compose_answer", "rank_sentences",
           "split_sentences", "terms"]

EXTRACTIVE_MODEL_ID = "local:extractive"

_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_WORD = re.compile(r"[a-z0-9]+(?:['’][a-z]+)?")
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
NO_ANSWER_EN = ("No generative model is configured, and the documents found do not answer this question: "
                "none of their sentences matches it closely enough to quote. Try the words your documents "
                "use, or configure a chat model (KNORA_CHAT_MODEL or a KnowledgeQA model).")
NO_ANSWER_ZH = ("未配置生成式模型，检索到的文档没有回答这个问题：其中没有与问题足够相关、可以直接引用的句子。"
                "可以换用文档中的说法提问，或配置对话模型。")
# A passage holding less than this share of the question's content words does not answer it. Unweighted: IDF
# over the few sentences retrieved gives the words no sentence holds the largest weights, so a weighted share
# would mostly measure how many question words are missing everywhere.
RELEVANCE_FLOOR = 1 / 3
# Question and function words a sentence need not repeat to answer: "how many", and Chinese pronouns,
# conjunctions and question words jieba keeps as words (the scoring's stopwords are kept short on purpose).
_QUESTION_WORDS = frozenset(
    ["mani", "much", "哪位", "哪一位", "能否", "还是", "我们", "你们", "他们", "她们", "它们", "人们",
     "大家", "自己", "如果", "因为", "所以", "但是", "而且", "虽然", "除了", "之外", "还有", "以及",
     "或者", "可以", "能够", "应该", "需要", "怎样", "怎么样", "什么样", "哪种", "哪一种", "哪些",
     "哪一年", "哪年", "时候", "这种", "那种", "这些", "那些", "为了", "通过", "关于", "对于", "已经",
     "一种", "一些", "主要", "其中", "当时", "认为", "之后", "之前", "以后", "以前"])


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
    span: tuple[int, int] = (0, 0)  # offsets of the quoted text in the passage's content
    relevance: float = 1.0  # share of the question's content words the unit holds
    passage_relevance: float = 1.0  # ... and the passage it is quoted from


def passages_from_messages(messages: Sequence[ChatMessage]) -> list[Passage]:
    found: list[Passage] = []
    for m in messages:
        for handle, body in _CHUNK_XML.findall(m.content):
            parts = _CONTENT_XML.findall(body)
            text = html.unescape(parts[-1] if parts else re.sub(r"<[^>]+>", " ", body))
            found.append(Passage(handle=handle, content=text, rank=len(found)))
    return found


@dataclass
class _Unit:
    passage: Passage
    first: int  # index of the first sentence in the passage
    sentences: list[Sentence]
    terms: list[str]

    @property
    def text(self) -> str:
        texts = [s.text for s in self.sentences]
        return "".join(texts) if is_cjk(texts[0]) else " ".join(texts)


def _units(passages: Sequence[Passage]) -> list[_Unit]:
    """Quotable single sentences, then adjacent pairs of one block (an answer often sits in the sentence
    after the one naming the subject: "The tower is in Paris. It was completed in 1889.")."""
    singles: list[_Unit] = []
    pairs: list[_Unit] = []
    for p, sentences in zip(passages, quotable_sentences([p.content for p in passages]), strict=True):
        mine = [_Unit(p, i, [s], terms(s.text)) for i, s in sentences]
        singles.extend(mine)
        for a, b in itertools.pairwise(mine):
            if b.first == a.first + 1 and a.sentences[0].block == b.sentences[0].block:
                pairs.append(_Unit(p, a.first, [*a.sentences, *b.sentences], [*a.terms, *b.terms]))
    return singles + pairs


def _query_words(query: str) -> list[str]:
    """The question's content words (no Chinese bigrams, no "many"/"much" of "how many"): what the relevance
    floor counts."""
    bigrams = {t for piece in re.findall(r"[\u3400-\u9fff\uf900-\ufaff]+", query.lower())
               for t in (piece[i : i + 2] for i in range(len(piece) - 1))}
    jieba_words = _jieba_words(query)
    words = [t for t in terms(query) if (t not in bigrams or t in jieba_words) and t not in _QUESTION_WORDS]
    return list(dict.fromkeys(words))


def _jieba_words(query: str) -> set[str]:
    if not is_cjk(query):
        return set()
    import jieba

    return {w for w in jieba.cut(query.lower(), HMM=True) if len(w) > 1 and w not in _STOP_ZH}


def _holds(word: str, have: set[str], text: str) -> float:
    """1 when the text (its terms ``have``, its lower-cased ``text``) holds the word; a Chinese word of three
    or more characters that jieba may cut otherwise in the text counts by the share of its character pairs the
    text holds."""
    if word in have:
        return 1.0
    if not is_cjk(word):  # a stem starting a word of the text ("configur" in "configuration")
        return 1.0 if re.search(r"\b" + re.escape(word), text) else 0.0
    if word in text:
        return 1.0
    pairs = [word[i : i + 2] for i in range(len(word) - 1)]
    return sum(p in text for p in pairs) / len(pairs) if len(word) > 2 else 0.0


def relevance(words: Sequence[str], have: set[str], text: str) -> float:
    """The share of the question's content ``words`` a text holds (1.0 when the question has none)."""
    return sum(_holds(w, have, text) for w in words) / len(words) if words else 1.0


def rank_sentences(query: str, passages: Sequence[Passage]) -> list[Pick]:
    """Score quotable sentences and adjacent pairs: IDF-weighted coverage of the question's terms, how tightly
    they cluster, the passage's rank, and whether the unit holds the kind of answer asked for."""
    q_terms = list(dict.fromkeys(terms(query)))
    if not q_terms:
        return []
    units = _units(passages)
    singles = [u for u in units if len(u.sentences) == 1]
    if not singles:
        return []
    n = len(singles)
    df = {t: sum(1 for u in singles if t in u.terms) for t in q_terms}
    idf = {t: math.log(1 + (n + 1) / (df[t] + 0.5)) for t in q_terms}
    total_idf = sum(idf.values()) or 1.0
    words = _query_words(query)
    qtype = question_type(query)
    passage_terms: dict[int, set[str]] = {}
    for u in singles:
        passage_terms.setdefault(id(u.passage), set()).update(u.terms)
    on_topic = {id(p): relevance(words, passage_terms.get(id(p), set()), p.content.lower()) for p in passages}
    picks: list[Pick] = []
    for u in units:
        present = [t for t in q_terms if t in u.terms]
        if not present:
            continue
        coverage = sum(idf[t] for t in present) / total_idf
        positions = sorted(j for j, t in enumerate(u.terms) if t in present)
        window = (positions[-1] - positions[0] + 1) if len(positions) > 1 else 1
        proximity = min(1.0, len(set(present)) / window) if len(present) > 1 else 0.0
        text = u.text
        kind = max(type_bonus(query, s.text, qtype) for s in u.sentences)  # per sentence: tags are cached
        score = coverage + 0.15 * proximity + 0.05 / (1 + u.passage.rank) + kind
        if len(u.sentences) > 1:
            score -= 0.08  # a pair must earn its extra length
        picks.append(Pick(sentence=text, handle=u.passage.handle, score=score,
                          order=(u.passage.rank, u.first, len(u.sentences)),
                          span=(u.sentences[0].start, u.sentences[-1].end),
                          relevance=relevance(words, set(u.terms), text.lower()),
                          passage_relevance=on_topic[id(u.passage)]))
    picks.sort(key=lambda k: (-k.score, k.order))
    return picks


def compose_answer(query: str, passages: Sequence[Passage], max_sentences: int = 2,
                   relative_floor: float = 0.6) -> str:
    zh = is_cjk(query)
    if not any(p.content.strip() for p in passages):
        return NOTHING_ZH if zh else NOTHING_EN
    picks = [p for p in rank_sentences(query, passages) if p.passage_relevance >= RELEVANCE_FLOOR]
    if not picks:
        return NO_ANSWER_ZH if zh else NO_ANSWER_EN
    chosen = choose(picks, max_sentences, relative_floor)
    by_handle = {p.handle: p for p in passages}
    lines = [cite_quote(p, by_handle.get(p.handle)) for p in chosen]
    return (NO_MODEL_ZH if zh else NO_MODEL_EN) + "\n\n" + "\n\n".join(lines)


def choose(picks: Sequence[Pick], max_sentences: int, relative_floor: float) -> list[Pick]:
    """The best picks within ``relative_floor`` of the best, never quoting a sentence twice, in document
    order."""
    best = picks[0].score
    chosen: list[Pick] = []
    used: set[tuple[int, int]] = set()
    for p in picks:
        if len(chosen) >= max_sentences or p.score < best * relative_floor:
            break
        span = {(p.order[0], p.order[1] + k) for k in range(p.order[2])}
        if span & used:
            continue
        chosen.append(p)
        used |= span
    chosen.sort(key=lambda p: p.order)  # read in document order
    return chosen


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
