"""``knora.services.kb.storage``: the one storage Knora has, named as WeKnora names it."""

from __future__ import annotations

from typing import Any

import pytest

from knora.domain.errors import ValidationFailed
from knora.domain.knowledge import StorageProviderConfig
from knora.services.kb import storage

pytestmark = pytest.mark.unit

LOCAL = (StorageProviderConfig(provider="local"), "builtin-local")


class TestBinding:
    @pytest.mark.parametrize("kwargs", [
        {}, {"provider_config": {}}, {"provider_config": {"provider": ""}},
        {"provider_config": {"provider": " Local "}}, {"legacy": {"provider": "local"}},
        {"backend_id": "builtin-local"}, {"backend_id": ""},
        {"provider_config": {"provider": "local"}, "legacy": {"provider": "local"},
         "backend_id": "builtin-local"},
    ])
    def test_what_names_local_or_nothing_is_local(self, kwargs: dict[str, Any]) -> None:
        assert storage.binding(**kwargs) == LOCAL

    @pytest.mark.parametrize("kwargs", [
        {"provider_config": {"provider": "minio"}}, {"legacy": {"provider": "cos"}},
        {"provider_config": {"provider": "local"}, "legacy": {"provider": "s3"}},
        {"provider_config": "local"}, {"provider_config": {"provider": 1}}, {"backend_id": "other"},
    ])
    def test_anything_else_is_refused(self, kwargs: dict[str, Any]) -> None:
        with pytest.raises(ValidationFailed):
            storage.binding(**kwargs)


class TestEngineConfig:
    def test_the_config_and_status_name_local_only(self) -> None:
        assert storage.engine_config()["default_provider"] == "local"
        status = storage.engine_status()
        assert [e["name"] for e in status["engines"]] == status["allowed_providers"] == ["local"]
        assert storage.local_backend(7).tenant_id == 7

    @pytest.mark.parametrize("body", [{}, {"default_provider": ""}, {"default_provider": "local"},
                                      {"local": {"path_prefix": ""}}, {"local": None},
                                      {"minio": {"endpoint": "x"}}])
    def test_accepted(self, body: dict[str, Any]) -> None:
        assert storage.check_engine_config(body) == storage.engine_config()

    @pytest.mark.parametrize("body", [{"default_provider": "oss"}, {"local": {"path_prefix": "a"}},
                                      {"local": []}, {"default_provider": 5}])
    def test_refused(self, body: dict[str, Any]) -> None:
        with pytest.raises(ValidationFailed):
            storage.check_engine_config(body)
