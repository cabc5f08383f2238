"""Retrieval and answer metrics: pure functions, shared by the evaluation runner and
``benchmarks/retrieval.py`` (one implementation, so their figures agree).

Retrieval (``ranked`` = corpus ids best first, duplicates already removed; ``gains`` = corpus id → graded gain
from the qrels, positive only):
- nDCG@k with the qrels' gains as given (linear gain, log2 discount, as trec_eval / BEIR); the ideal ranking
  is the gains sorted high to low. With 0/1 gains it is binary nDCG.
- recall@k = relevant in the top k / relevant; precision@k = relevant in the top k / k.
- MRR@k = 1 / rank of the first relevant passage within the top k (0 if none); AP@k as in trec_eval.

Answers (SQuAD's normalisation: NFKC, lower case, punctuation and the English articles removed, whitespace
collapsed; CJK characters are one token each, so Chinese is scored by characters):
- contains-gold: some gold answer's token sequence occurs in the answer's (word-aligned, so "four" is not
  found in "fourteen");
- token F1: SQuAD's bag-of-tokens F1, the best over the gold answers.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Mapping, Sequence

RETRIEVAL_KEYS = ("ndcg@3", "ndcg@10", "recall@10", "recall@100", "precision@10", "mrr@10", "map@100")

_TAG = re.compile(r"<[^>]*>")
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_CJK = ("\u2e80-\u2fff\u3040-\u30ff\u3100-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
        "\U00020000-\U0002fa1f")
_TOKEN = re.compile(f"[{_CJK}]|[^\\s{_CJK}]+")


def dcg(gains: Sequence[float]) -> float:
    return sum(g / math.log2(i + 2) for i, g in enumerate(gains))


def ndcg_at(ranked: Sequence[str], gains: Mapping[str, float], k: int) -> float:
    ideal = dcg(sorted(gains.values(), reverse=True)[:k])
    return dcg([gains.get(d, 0.0) for d in ranked[:k]]) / ideal if ideal > 0 else 0.0


def recall_at(ranked: Sequence[str], gains: Mapping[str, float], k: int) -> float:
    relevant = {d for d, g in gains.items() if g > 0}
    return len(relevant & set(ranked[:k])) / len(relevant) if relevant else 0.0


def precision_at(ranked: Sequence[str], gains: Mapping[str, float], k: int) -> float:
    return sum(1 for d in ranked[:k] if gains.get(d, 0.0) > 0) / k


def mrr_at(ranked: Sequence[str], gains: Mapping[str, float], k: int) -> float:
    return next((1 / (i + 1) for i, d in enumerate(ranked[:k]) if gains.get(d, 0.0) > 0), 0.0)


def average_precision_at(ranked: Sequence[str], gains: Mapping[str, float], k: int) -> float:
    relevant = sum(1 for g in gains.values() if g > 0)
    hits, total = 0, 0.0
    for i, d in enumerate(ranked[:k]):
        if gains.get(d, 0.0) > 0:
            hits += 1
            total += hits / (i + 1)
    return total / relevant if relevant else 0.0


def retrieval_metrics(ranked: Sequence[str], gains: Mapping[str, float]) -> dict[str, float]:
    """One query's figures under ``RETRIEVAL_KEYS``."""
    return {"ndcg@3": ndcg_at(ranked, gains, 3), "ndcg@10": ndcg_at(ranked, gains, 10),
            "recall@10": recall_at(ranked, gains, 10), "recall@100": recall_at(ranked, gains, 100),
            "precision@10": precision_at(ranked, gains, 10), "mrr@10": mrr_at(ranked, gains, 10),
            "map@100": average_precision_at(ranked, gains, 100)}


def dedupe(ids: Sequence[str]) -> list[str]:
    """Ids in first-seen order: a passage split into several chunks ranks where its best chunk ranks."""
    return list(dict.fromkeys(ids))


def mean(rows: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """Per-key mean over ``rows`` (keys of the first row); {} for no rows."""
    if not rows:
        return {}
    return {k: sum(r[k] for r in rows) / len(rows) for k in rows[0]}


# --- answers ------------------------------------------------------------------------------------------------
def normalize(text: str) -> str:
    """SQuAD's answer normalisation, plus NFKC and the removal of markup (citation tags) and of every Unicode
    punctuation mark (so Chinese punctuation goes too)."""
    text = unicodedata.normalize("NFKC", _TAG.sub(" ", text)).lower()
    text = "".join(" " if unicodedata.category(ch).startswith("P") else ch for ch in text)
    return " ".join(_ARTICLES.sub(" ", text).split())


def tokens(text: str) -> list[str]:
    """Normalised tokens: words, and each CJK character on its own."""
    return _TOKEN.findall(normalize(text))


def contains_gold(answer: str, golds: Sequence[str]) -> bool:
    have = " " + " ".join(tokens(answer)) + " "
    return any((gold := " ".join(tokens(g))) and f" {gold} " in have for g in golds)


def token_f1(answer: str, golds: Sequence[str]) -> float:
    pred = tokens(answer)
    best = 0.0
    for g in golds:
        gold = tokens(g)
        if not pred or not gold:
            best = max(best, float(pred == gold))
            continue
        common = sum((Counter(pred) & Counter(gold)).values())
        if common:
            p, r = common / len(pred), common / len(gold)
            best = max(best, 2 * p * r / (p + r))
    return best


# --- WeKnora's generation metrics (BLEU-1/2/4, ROUGE-1/2/L F-measure) over the same tokens ------------------
def _ngrams(toks: Sequence[str], n: int) -> Counter[tuple[str, ...]]:
    return Counter(tuple(toks[i:i + n]) for i in range(len(toks) - n + 1))


def bleu(answer: str, reference: str, max_n: int) -> float:
    """Sentence BLEU with uniform weights over 1..max_n and the brevity penalty; 0 when any order has no
    match (no smoothing)."""
    cand, ref = tokens(answer), tokens(reference)
    if not cand or not ref:
        return 0.0
    logs = []
    for n in range(1, max_n + 1):
        c, r = _ngrams(cand, n), _ngrams(ref, n)
        total = sum(c.values())
        matched = sum((c & r).values())
        if not total or not matched:
            return 0.0
        logs.append(math.log(matched / total))
    bp = 1.0 if len(cand) > len(ref) else math.exp(1 - len(ref) / len(cand))
    return bp * math.exp(sum(logs) / max_n)


def _f(overlap: int, cand: int, ref: int) -> float:
    if not overlap:
        return 0.0
    p, r = overlap / cand, overlap / ref
    return 2 * p * r / (p + r)


def rouge_n(answer: str, reference: str, n: int) -> float:
    c, r = _ngrams(tokens(answer), n), _ngrams(tokens(reference), n)
    return _f(sum((c & r).values()), sum(c.values()), sum(r.values()))


def rouge_l(answer: str, reference: str) -> float:
    cand, ref = tokens(answer), tokens(reference)
    if not cand or not ref:
        return 0.0
    prev = [0] * (len(ref) + 1)
    for a in cand:  # longest common subsequence, one row at a time
        row = [0]
        for j, b in enumerate(ref, 1):
            row.append(prev[j - 1] + 1 if a == b else max(prev[j], row[j - 1]))
        prev = row
    return _f(prev[-1], len(cand), len(ref))


def generation_metrics(answer: str, golds: Sequence[str]) -> dict[str, float]:
    """Each figure's best over the gold answers."""
    rows = [{"bleu1": bleu(answer, g, 1), "bleu2": bleu(answer, g, 2), "bleu4": bleu(answer, g, 4),
             "rouge1": rouge_n(answer, g, 1), "rouge2": rouge_n(answer, g, 2), "rougel": rouge_l(answer, g)}
            for g in golds]
    return {k: max(r[k] for r in rows) for k in rows[0]} if rows else {}
