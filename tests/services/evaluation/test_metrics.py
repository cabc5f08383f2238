"""The metric functions against values worked out by hand."""

from __future__ import annotations

import math

import pytest

from knora.services.evaluation import metrics as m

pytestmark = pytest.mark.unit

L2, L3, L4 = math.log2(2), math.log2(3), math.log2(4)


class TestRetrieval:
    def test_graded_ndcg_uses_the_qrels_gains(self) -> None:
        gains = {"a": 3.0, "b": 1.0, "c": 2.0}
        ranked = ["b", "x", "a"]
        # DCG = 1/log2(2) + 0 + 3/log2(4); ideal = 3/log2(2) + 2/log2(3) + 1/log2(4)
        expected = (1 / L2 + 3 / L4) / (3 / L2 + 2 / L3 + 1 / L4)
        assert m.ndcg_at(ranked, gains, 10) == pytest.approx(expected)
        assert m.ndcg_at(["a", "c", "b"], gains, 10) == pytest.approx(1.0)
        # binary gains give binary nDCG: one relevant at rank 2 → 1/log2(3)
        assert m.ndcg_at(["x", "a"], {"a": 1.0}, 10) == pytest.approx(1 / L3)

    def test_ndcg_cut_ideal_at_k(self) -> None:
        gains = {f"d{i}": 1.0 for i in range(12)}
        ranked = [f"d{i}" for i in range(10)]
        assert m.ndcg_at(ranked, gains, 10) == pytest.approx(1.0)  # the ideal is cut at k too
        assert m.ndcg_at(["x", "y", "z"], gains, 3) == 0.0

    def test_recall_precision_mrr_ap(self) -> None:
        gains = {"a": 1.0, "b": 2.0, "c": 1.0, "d": 1.0}
        ranked = ["x", "a", "y", "b"] + [f"n{i}" for i in range(96)] + ["c"]
        assert m.recall_at(ranked, gains, 10) == 0.5
        assert m.recall_at(ranked, gains, 100) == 0.5  # c is at rank 101
        assert m.recall_at(ranked, gains, 101) == 0.75
        assert m.precision_at(ranked, gains, 10) == pytest.approx(0.2)
        assert m.mrr_at(ranked, gains, 10) == 0.5
        assert m.mrr_at(["x"] * 10 + ["a"], gains, 10) == 0.0
        # AP@100 = (1/2 + 2/4) / 4 relevant
        assert m.average_precision_at(ranked, gains, 100) == pytest.approx(0.25)

    def test_retrieval_metrics_keys_and_dedupe(self) -> None:
        assert tuple(m.retrieval_metrics(["a"], {"a": 1.0})) == m.RETRIEVAL_KEYS
        assert m.dedupe(["a", "b", "a", "c", "b"]) == ["a", "b", "c"]
        assert m.mean([{"x": 1.0}, {"x": 0.0}]) == {"x": 0.5}
        assert m.mean([]) == {}


class TestAnswers:
    def test_normalisation_is_squad_s(self) -> None:
        assert m.normalize("The  Panthers' <ref id=\"c1\"/> defence!") == "panthers defence"
        assert m.tokens("A cat, an owl and the dog.") == ["cat", "owl", "and", "dog"]

    def test_chinese_is_tokenised_by_character(self) -> None:
        assert m.tokens("黑豹队丢了308分。") == ["黑", "豹", "队", "丢", "了", "308", "分"]

    def test_contains_gold_is_word_aligned(self) -> None:
        assert m.contains_gold("They allowed 308 points.", ["308"])
        assert m.contains_gold("It was THE Carolina Panthers!", ["carolina panthers"])
        assert not m.contains_gold("fourteen", ["four"])
        assert m.contains_gold("黑豹队只丢了 308分", ["308"])
        assert m.contains_gold("首都是北京。", ["北京"])
        assert not m.contains_gold("anything", ["", "  "])

    def test_token_f1(self) -> None:
        # pred: [carolina, panthers, won]; gold: [panthers]; p = 1/3, r = 1 → F1 = 0.5
        assert m.token_f1("The Carolina Panthers won", ["Panthers"]) == pytest.approx(0.5)
        assert m.token_f1("Denver Broncos", ["Carolina Panthers", "Denver Broncos"]) == 1.0
        assert m.token_f1("nothing", ["Panthers"]) == 0.0
        # Chinese by characters: pred 北京市 (3), gold 北京 (2): common 2 → p = 2/3, r = 1 → F1 = 0.8
        assert m.token_f1("北京市", ["北京"]) == pytest.approx(0.8)

    def test_bleu_and_rouge(self) -> None:
        # cand [cat, sat, on, mat] vs ref [cat, sat, on, red, mat]: p1 = 4/4; BP = exp(1 - 5/4)
        assert m.bleu("the cat sat on the mat", "the cat sat on the red mat", 1) == pytest.approx(
            math.exp(1 - 5 / 4))
        # p2: cand bigrams (cat sat)(sat on)(on mat), matched 2/3
        assert m.bleu("cat sat on mat", "cat sat on red mat", 2) == pytest.approx(
            math.exp(1 - 5 / 4) * math.sqrt(2 / 3))
        assert m.bleu("cat", "dog", 1) == 0.0
        assert m.rouge_n("cat sat on mat", "cat sat on red mat", 1) == pytest.approx(2 * 1 * 0.8 / 1.8)
        assert m.rouge_l("cat sat on mat", "cat on sat red mat") == pytest.approx(2 * 0.75 * 0.6 / 1.35)
        g = m.generation_metrics("cat sat", ["dog", "cat sat"])
        assert g["bleu1"] == 1.0
        assert g["rougel"] == 1.0
