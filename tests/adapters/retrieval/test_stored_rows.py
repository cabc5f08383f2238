"""``StoredRows`` (knora/ports/retrieval.py) on every engine that has it: the rows of documents come back as
indexed, vectors included, so a copy or a move re-indexes them without embedding again."""

from __future__ import annotations

from typing import Any

import pytest

from knora.ports.retrieval import StoredRows
from tests.adapters.retrieval.test_engine_contract import row, vec


class TestStoredRows:
    async def test_rows_come_back_with_their_vectors(self, engine: Any) -> None:
        assert isinstance(engine, StoredRows)
        await engine.index([
            row("c1", "alpha text", knowledge="k1", emb=vec(0), tag_id="t1"),
            row("c1-q1", "a question about alpha", knowledge="k1", chunk="c1", emb=vec(1)),
            row("c2", "beta text without a vector", knowledge="k1"),
            row("c3", "gamma text", knowledge="k2", emb=vec(2), is_enabled=False),
            row("c4", "other document", knowledge="k3", emb=vec(3)),
        ])
        got = {r.source_id: r for r in await engine.rows_for_knowledge(["k1", "k2"])}
        assert set(got) == {"c1", "c1-q1", "c2", "c3"}
        assert got["c1-q1"].chunk_id == "c1"
        assert got["c1"].tag_id == "t1"
        assert got["c1"].content == "alpha text"
        assert got["c1"].embedding == pytest.approx(vec(0), abs=1e-6)
        assert got["c1-q1"].embedding == pytest.approx(vec(1), abs=1e-6)
        assert got["c2"].embedding is None
        assert got["c3"].is_enabled is False
        assert {r.knowledge_base_id for r in got.values()} == {"kb1"}
        assert await engine.rows_for_knowledge([]) == []
        assert await engine.rows_for_knowledge(["nope"]) == []
