"""Fusion modes on hand-computed cases."""

from __future__ import annotations

import pytest

from knora.services.retrieval.fusion import (
    FUSIONS,
    FusionConfig,
    convex,
    dedupe_by_score,
    fuse,
    rrf,
    weighted_rrf,
)

pytestmark = pytest.mark.unit

V = [("a", 0.9), ("b", 0.8), ("c", 0.5)]
K = [("b", 0.7), ("d", 0.6), ("a", 0.1)]


class TestWeightedRRF:
    def test_hand_computed(self) -> None:
        out = dict(weighted_rrf(V, K, FusionConfig()))
        assert out["a"] == pytest.approx(0.7 / 61 + 0.3 / 63)
        assert out["b"] == pytest.approx(0.7 / 62 + 0.3 / 61)
        assert out["c"] == pytest.approx(0.7 / 63)
        assert out["d"] == pytest.approx(0.3 / 62)
        assert [cid for cid, _ in weighted_rrf(V, K, FusionConfig())] == ["a", "b", "c", "d"]

    def test_first_occurrence_sets_rank(self) -> None:
        out = dict(weighted_rrf([("a", 0.9), ("a", 0.95), ("b", 0.5)], [], FusionConfig()))
        assert out["a"] == pytest.approx(0.7 / 61)
        assert out["b"] == pytest.approx(0.7 / 63)

    def test_defaults_for_non_positive_config(self) -> None:
        cfg = FusionConfig(k=0, vector_weight=0, keyword_weight=-1)
        assert dict(weighted_rrf(V, K, cfg)) == pytest.approx(dict(weighted_rrf(V, K, FusionConfig())))

    def test_custom_weights(self) -> None:
        out = dict(weighted_rrf(V, K, FusionConfig(k=10, vector_weight=0.5, keyword_weight=0.5)))
        assert out["b"] == pytest.approx(0.5 / 12 + 0.5 / 11)


class TestRRF:
    def test_equal_weights(self) -> None:
        out = rrf(V, K, FusionConfig(vector_weight=0.9, keyword_weight=0.1))
        assert dict(out)["a"] == pytest.approx(1 / 61 + 1 / 63)
        assert dict(out)["b"] == pytest.approx(1 / 62 + 1 / 61)
        assert [cid for cid, _ in out][:2] == ["b", "a"]


class TestConvex:
    def test_min_max_then_mix(self) -> None:
        out = dict(convex(V, K, FusionConfig(alpha=0.5)))
        # vector: a 1.0, b 0.75, c 0.0 ; keyword: b 1.0, d 0.8333, a 0.0
        assert out["a"] == pytest.approx(0.5)
        assert out["b"] == pytest.approx(0.5 * 0.75 + 0.5 * 1.0)
        assert out["c"] == pytest.approx(0.0)
        assert out["d"] == pytest.approx(0.5 * (0.5 / 0.6))

    def test_alpha_extremes(self) -> None:
        assert [c for c, _ in convex(V, K, FusionConfig(alpha=1.0))] == ["a", "b", "d",
                                                                         "c"]  # tie: better rank
        assert [c for c, _ in convex(V, K, FusionConfig(alpha=0.0))][:2] == ["b", "d"]

    def test_single_item_lists_normalise_to_one(self) -> None:
        out = dict(convex([("a", 0.3)], [("a", 2.0)], FusionConfig(alpha=0.5)))
        assert out["a"] == pytest.approx(1.0)


class TestTable:
    def test_named_modes(self) -> None:
        assert set(FUSIONS) == {"rrf", "weighted_rrf", "convex"}
        assert fuse("weighted_rrf", V, K, FusionConfig()) == weighted_rrf(V, K, FusionConfig())
        assert fuse(None, V, K, FusionConfig())  # the default mode exists

    def test_unknown_mode(self) -> None:
        with pytest.raises(ValueError, match="unknown fusion mode"):
            fuse("nope", V, K, FusionConfig())

    def test_dedupe_keeps_highest_raw_score(self) -> None:
        assert dedupe_by_score([("a", 0.2), ("b", 0.9), ("a", 0.95)]) == [("a", 0.95), ("b", 0.9)]

    def test_ties_are_deterministic(self) -> None:
        out = weighted_rrf([("x", 1.0)], [("y", 1.0)], FusionConfig(vector_weight=0.5, keyword_weight=0.5))
        assert [c for c, _ in out] == ["x", "y"]
