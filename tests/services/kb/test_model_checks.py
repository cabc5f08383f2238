"""The providers list and a check's client, straight on the service (knora.services.kb.model_checks)."""

from __future__ import annotations

import pytest

from knora.adapters.llm.registry import CHAT_PROVIDERS, RERANK_PROVIDERS
from knora.root import Services
from knora.services.kb.model_checks import CheckTarget, ModelChecks, providers
from tests.fakes.model_server import FakeModelServer

pytestmark = pytest.mark.integration


class TestProviders:
    def test_every_listed_provider_is_one_a_client_is_built_for(self) -> None:
        listed = providers()
        assert listed
        for p in listed:
            if "chat" in p.model_types:
                assert p.value in CHAT_PROVIDERS
            if "rerank" in p.model_types:
                assert p.value in RERANK_PROVIDERS
            assert set(p.default_urls) <= set(p.model_types)

    def test_filter_by_type(self) -> None:
        assert {p.value for p in providers("rerank")} >= {"jina", "cohere", "tei"}
        assert all("embedding" in p.model_types for p in providers("embedding"))


class TestChecks:
    async def test_chat_check_sends_one_small_request(self, sqlite_container: Services,
                                                      fake: FakeModelServer) -> None:
        checks = ModelChecks(sqlite_container.settings, sqlite_container.repos.models)
        result = await checks.chat(sqlite_container.default_tenant_id,
                                   CheckTarget(name="fake-chat", base_url=fake.base_url))
        assert result.available, result.message
        assert len(fake.chat_requests) == 1
        assert fake.chat_requests[0]["max_tokens"] == 8
