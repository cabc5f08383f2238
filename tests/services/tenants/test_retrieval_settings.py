"""Validation of the tenant's retrieval settings (knora.services.tenants.retrieval_settings)."""

from __future__ import annotations

import pytest

from knora.domain.errors import BadRequest
from knora.root import Services
from knora.services.tenants.retrieval_settings import validated

pytestmark = pytest.mark.integration


class TestValidated:
    async def test_keeps_known_checked_values(self, sqlite_container: Services) -> None:
        got = await validated(sqlite_container.default_tenant_id, {
            "embedding_top_k": 10.0, "vector_threshold": 0, "fusion": "", "rerank_model_id": "",
            "feedback_enabled": True, "other": 1, "rerank_top_k": None}, sqlite_container.repos.models)
        assert got == {"embedding_top_k": 10, "vector_threshold": 0.0, "fusion": None, "rerank_model_id": "",
                       "feedback_enabled": True}

    @pytest.mark.parametrize("body", [{"rrf_k": 0}, {"rrf_k": 10_001}, {"keyword_threshold": -0.1},
                                      {"convex_alpha": float("nan")}, {"fusion": 3}])
    async def test_refuses_out_of_range(self, sqlite_container: Services, body: dict[str, object]) -> None:
        with pytest.raises(BadRequest):
            await validated(sqlite_container.default_tenant_id, body, sqlite_container.repos.models)
