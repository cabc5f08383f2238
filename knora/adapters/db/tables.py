"""Every table of the metadata store. Shared by all repositories; schema changes go through Alembic.

Portable column types only (String ids, JSON, timezone-aware DateTime), so one schema serves SQLite and
PostgreSQL. Retrieval engines own their index tables (FTS5, tsvector, pgvector) and create them themselves.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    and_,
    literal_column,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from knora.domain.common import utcnow


class Base(DeclarativeBase):
    # read once by SQLAlchemy (a class-level dict on purpose)
    type_annotation_map = {dict[str, Any]: JSON, list[Any]: JSON, datetime: DateTime(timezone=True)}


def _id() -> Mapped[str]:
    return mapped_column(String(36), primary_key=True)


def _created() -> Mapped[datetime]:
    return mapped_column(DateTime(timezone=True), default=utcnow, nullable=False)


def _updated() -> Mapped[datetime]:
    return mapped_column(DateTime(timezone=True), default=utcnow, onupdate=utcnow, nullable=False)


class TenantRow(Base):
    __tablename__ = "tenants"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(255))
    description: Mapped[str] = mapped_column(Text, default="")
    retrieval_config: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    created_at: Mapped[datetime] = _created()
    updated_at: Mapped[datetime] = _updated()


class ApiKeyRow(Base):
    __tablename__ = "api_keys"
    id: Mapped[str] = _id()
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(255), default="default")
    key_hash: Mapped[str] = mapped_column(String(64), unique=True)  # sha256 hex of the plaintext
    prefix: Mapped[str] = mapped_column(String(16), default="")
    # keys made before roles existed were all-powerful: they stay owner keys (migration 0010)
    role: Mapped[str] = mapped_column(String(16), default="owner", server_default="owner")
    expires_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    last_used_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    created_by: Mapped[str | None] = mapped_column(String(64), nullable=True)
    created_at: Mapped[datetime] = _created()


class UserRow(Base):
    __tablename__ = "users"
    id: Mapped[str] = _id()
    username: Mapped[str] = mapped_column(String(64), unique=True)
    email: Mapped[str] = mapped_column(String(255), unique=True)  # stored lower-cased
    password_hash: Mapped[str] = mapped_column(String(255))
    is_active: Mapped[bool] = mapped_column(Boolean, default=True)
    created_at: Mapped[datetime] = _created()
    updated_at: Mapped[datetime] = _updated()


class TenantMemberRow(Base):
    __tablename__ = "tenant_members"
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"), primary_key=True)
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), primary_key=True,
                                         index=True)
    role: Mapped[str] = mapped_column(String(16))
    invited_by: Mapped[str | None] = mapped_column(String(64), nullable=True)
    created_at: Mapped[datetime] = _created()


class AuthSessionRow(Base):
    """A login: its refresh token (hashed; rotated on each refresh) and whether it was ended. Access tokens
    name their session, so logging out or changing the password ends them too."""

    __tablename__ = "auth_sessions"
    id: Mapped[str] = _id()
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    refresh_hash: Mapped[str] = mapped_column(String(64), unique=True)
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    created_at: Mapped[datetime] = _created()


class InvitationRow(Base):
    __tablename__ = "tenant_invitations"
    id: Mapped[str] = _id()
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"), index=True)
    email: Mapped[str] = mapped_column(String(255), index=True)
    role: Mapped[str] = mapped_column(String(16))
    invited_by: Mapped[str | None] = mapped_column(String(64), nullable=True)
    status: Mapped[str] = mapped_column(String(16), default="pending")
    expires_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    created_at: Mapped[datetime] = _created()


class ShareRow(Base):
    __tablename__ = "shares"
    __table_args__ = (Index("ix_shares_resource_target", "resource_type", "resource_id", "tenant_id",
                            unique=True),)
    id: Mapped[str] = _id()
    resource_type: Mapped[str] = mapped_column(String(32))
    resource_id: Mapped[str] = mapped_column(String(36))
    owner_tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"), index=True)
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"), index=True)
    permission: Mapped[str] = mapped_column(String(16))
    created_by: Mapped[str | None] = mapped_column(String(64), nullable=True)
    created_at: Mapped[datetime] = _created()


class AuditRow(Base):
    __tablename__ = "audit_log"
    __table_args__ = (Index("ix_audit_log_tenant_id_id", "tenant_id", "id"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    tenant_id: Mapped[int] = mapped_column(Integer)  # kept when the tenant is deleted: the log outlives it
    actor: Mapped[str] = mapped_column(String(128))
    action: Mapped[str] = mapped_column(String(255))
    target: Mapped[str] = mapped_column(Text, default="")
    status: Mapped[int] = mapped_column(Integer, default=200)
    ip: Mapped[str] = mapped_column(String(64), default="")
    detail: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    created_at: Mapped[datetime] = _created()


class KnowledgeBaseRow(Base):
    __tablename__ = "knowledge_bases"
    id: Mapped[str] = _id()
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(255))
    description: Mapped[str] = mapped_column(Text, default="")
    type: Mapped[str] = mapped_column(String(16), default="document")
    is_temporary: Mapped[bool] = mapped_column(Boolean, default=False)
    chunking_config: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    embedding_model_id: Mapped[str] = mapped_column(String(255), default="")
    summary_model_id: Mapped[str] = mapped_column(String(255), default="")
    rerank_model_id: Mapped[str] = mapped_column(String(255), default="")
    indexing_strategy: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    faq_config: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    retrieval_config: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    question_generation_config: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    extract_config: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    vector_store_id: Mapped[str] = mapped_column(String(64), default="")
    storage_provider_config: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    storage_backend_id: Mapped[str] = mapped_column(String(64), default="")
    vlm_config: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    created_at: Mapped[datetime] = _created()
    updated_at: Mapped[datetime] = _updated()


class KnowledgeRow(Base):
    __tablename__ = "knowledges"
    __table_args__ = (Index("ix_knowledges_kb_hash", "knowledge_base_id", "file_hash"),)
    id: Mapped[str] = _id()
    tenant_id: Mapped[int] = mapped_column(Integer, index=True)
    knowledge_base_id: Mapped[str] = mapped_column(ForeignKey("knowledge_bases.id", ondelete="CASCADE"),
                                                   index=True)
    type: Mapped[str] = mapped_column(String(16), default="file")
    title: Mapped[str] = mapped_column(Text, default="")
    description: Mapped[str] = mapped_column(Text, default="")
    source: Mapped[str] = mapped_column(Text, default="")
    file_name: Mapped[str] = mapped_column(Text, default="")
    file_type: Mapped[str] = mapped_column(String(32), default="")
    file_size: Mapped[int] = mapped_column(BigInteger, default=0)
    file_hash: Mapped[str] = mapped_column(String(64), default="")
    file_path: Mapped[str] = mapped_column(Text, default="")
    parse_status: Mapped[str] = mapped_column(String(16), default="pending", index=True)
    enable_status: Mapped[str] = mapped_column(String(16), default="enabled")
    error_message: Mapped[str] = mapped_column(Text, default="")
    metadata_: Mapped[dict[str, Any]] = mapped_column("metadata", JSON, default=dict)
    tag_id: Mapped[str | None] = mapped_column(String(36), nullable=True)
    embedding_model_id: Mapped[str] = mapped_column(String(255), default="")
    channel: Mapped[str] = mapped_column(String(32), default="web")
    processed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    created_at: Mapped[datetime] = _created()
    updated_at: Mapped[datetime] = _updated()


class ChunkRow(Base):
    __tablename__ = "chunks"
    __table_args__ = (Index("ix_chunks_knowledge_index", "knowledge_id", "chunk_index"),)
    id: Mapped[str] = _id()
    tenant_id: Mapped[int] = mapped_column(Integer, index=True)
    knowledge_base_id: Mapped[str] = mapped_column(String(36), index=True)
    knowledge_id: Mapped[str] = mapped_column(ForeignKey("knowledges.id", ondelete="CASCADE"), index=True)
    tag_id: Mapped[str | None] = mapped_column(String(36), nullable=True)
    content: Mapped[str] = mapped_column(Text)
    context_header: Mapped[str] = mapped_column(Text, default="")
    chunk_index: Mapped[int] = mapped_column(Integer, default=0)
    chunk_type: Mapped[str] = mapped_column(String(32), default="text")
    parent_chunk_id: Mapped[str | None] = mapped_column(String(36), nullable=True, index=True)
    pre_chunk_id: Mapped[str | None] = mapped_column(String(36), nullable=True)
    next_chunk_id: Mapped[str | None] = mapped_column(String(36), nullable=True)
    start_at: Mapped[int] = mapped_column(Integer, default=0)
    end_at: Mapped[int] = mapped_column(Integer, default=0)
    is_enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    flags: Mapped[int] = mapped_column(Integer, default=1)
    index_status: Mapped[str] = mapped_column(String(16), default="ready")
    content_revision: Mapped[int] = mapped_column(Integer, default=0)
    content_hash: Mapped[str] = mapped_column(String(64), default="")
    metadata_: Mapped[dict[str, Any]] = mapped_column("metadata", JSON, default=dict)
    relation_chunks: Mapped[list[Any]] = mapped_column(JSON, default=list)
    image_info: Mapped[list[Any]] = mapped_column(JSON, default=list)
    created_at: Mapped[datetime] = _created()
    updated_at: Mapped[datetime] = _updated()


class TagRow(Base):
    __tablename__ = "tags"
    id: Mapped[str] = _id()
    tenant_id: Mapped[int] = mapped_column(Integer, index=True)
    knowledge_base_id: Mapped[str] = mapped_column(ForeignKey("knowledge_bases.id", ondelete="CASCADE"),
                                                   index=True)
    name: Mapped[str] = mapped_column(String(255))
    color: Mapped[str] = mapped_column(String(32), default="")
    sort_order: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = _created()
    updated_at: Mapped[datetime] = _updated()


class ModelRow(Base):
    __tablename__ = "models"
    id: Mapped[str] = _id()
    tenant_id: Mapped[int] = mapped_column(Integer, index=True)
    name: Mapped[str] = mapped_column(String(255))
    display_name: Mapped[str] = mapped_column(String(255), default="")
    type: Mapped[str] = mapped_column(String(32))
    source: Mapped[str] = mapped_column(String(16), default="remote")
    description: Mapped[str] = mapped_column(Text, default="")
    parameters: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    api_key: Mapped[str] = mapped_column(Text, default="")
    is_default: Mapped[bool] = mapped_column(Boolean, default=False)
    is_builtin: Mapped[bool] = mapped_column(Boolean, default=False)
    status: Mapped[str] = mapped_column(String(16), default="active")
    created_at: Mapped[datetime] = _created()
    updated_at: Mapped[datetime] = _updated()


class SessionRow(Base):
    __tablename__ = "sessions"
    id: Mapped[str] = _id()
    tenant_id: Mapped[int] = mapped_column(Integer, index=True)
    user_id: Mapped[str] = mapped_column(String(512), default="")
    title: Mapped[str] = mapped_column(String(255), default="")
    description: Mapped[str] = mapped_column(Text, default="")
    is_pinned: Mapped[bool] = mapped_column(Boolean, default=False)
    pinned_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    last_request_state: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    source: Mapped[str] = mapped_column(String(32), default="web")
    agent_id: Mapped[str] = mapped_column(String(64), default="")
    created_at: Mapped[datetime] = _created()
    updated_at: Mapped[datetime] = _updated()


class MessageRow(Base):
    __tablename__ = "messages"
    __table_args__ = (Index("ix_messages_session_created", "session_id", "created_at"),)
    id: Mapped[str] = _id()
    session_id: Mapped[str] = mapped_column(ForeignKey("sessions.id", ondelete="CASCADE"), index=True)
    tenant_id: Mapped[int] = mapped_column(Integer, index=True)
    request_id: Mapped[str] = mapped_column(String(64), default="", index=True)
    role: Mapped[str] = mapped_column(String(16))
    content: Mapped[str] = mapped_column(Text, default="")
    rendered_content: Mapped[str] = mapped_column(Text, default="")
    knowledge_references: Mapped[list[Any]] = mapped_column(JSON, default=list)
    agent_steps: Mapped[list[Any]] = mapped_column(JSON, default=list)
    mentioned_items: Mapped[list[Any]] = mapped_column(JSON, default=list)
    images: Mapped[list[Any]] = mapped_column(JSON, default=list)
    is_completed: Mapped[bool] = mapped_column(Boolean, default=False)
    is_fallback: Mapped[bool] = mapped_column(Boolean, default=False)
    agent_duration_ms: Mapped[int] = mapped_column(BigInteger, default=0)
    channel: Mapped[str] = mapped_column(String(32), default="web")
    agent_id: Mapped[str] = mapped_column(String(64), default="")
    model_id: Mapped[str] = mapped_column(String(255), default="")
    debug: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)  # stage timings, per-path scores
    feedback_rating: Mapped[str] = mapped_column(String(16), default="")
    feedback_reason: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime] = _created()
    updated_at: Mapped[datetime] = _updated()


# Incomplete assistant messages: the orphan sweep's predicate (every lease TTL, on every replica). A partial
# index keeps the sweep from scanning every message ever written for the handful of turns in flight; the
# sweep's query uses this expression itself (``repos/messages.py: incomplete_query``), since SQLite uses a
# partial index only when the query repeats its terms (a literal, not a bound parameter, for the role).
INCOMPLETE_TURN = and_(MessageRow.is_completed.is_(False), MessageRow.role == literal_column("'assistant'"))
Index("ix_messages_incomplete", MessageRow.created_at,
      sqlite_where=INCOMPLETE_TURN, postgresql_where=INCOMPLETE_TURN)


class AgentRow(Base):
    __tablename__ = "agents"
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    tenant_id: Mapped[int] = mapped_column(Integer, index=True)
    name: Mapped[str] = mapped_column(String(255))
    description: Mapped[str] = mapped_column(Text, default="")
    avatar: Mapped[str] = mapped_column(Text, default="")
    is_builtin: Mapped[bool] = mapped_column(Boolean, default=False)
    config: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    created_at: Mapped[datetime] = _created()
    updated_at: Mapped[datetime] = _updated()


class MCPServiceRow(Base):
    __tablename__ = "mcp_services"
    id: Mapped[str] = _id()
    tenant_id: Mapped[int] = mapped_column(Integer, index=True)
    name: Mapped[str] = mapped_column(String(255))
    description: Mapped[str] = mapped_column(Text, default="")
    transport_type: Mapped[str] = mapped_column(String(32), default="sse")
    url: Mapped[str] = mapped_column(Text, default="")
    headers: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    auth_config: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    advanced_config: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    stdio_config: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    env_vars: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    # tool name → requires approval
    tool_approvals: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    created_at: Mapped[datetime] = _created()
    updated_at: Mapped[datetime] = _updated()


class WebSearchProviderRow(Base):
    __tablename__ = "web_search_providers"
    id: Mapped[str] = _id()
    tenant_id: Mapped[int] = mapped_column(Integer, index=True)
    name: Mapped[str] = mapped_column(String(255))
    provider: Mapped[str] = mapped_column(String(32))
    description: Mapped[str] = mapped_column(Text, default="")
    parameters: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    is_default: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = _created()
    updated_at: Mapped[datetime] = _updated()


class JobRow(Base):
    """Durable job queue for the embedded profile: a restart finds queued/running jobs here and runs them."""

    __tablename__ = "jobs"
    id: Mapped[str] = _id()
    kind: Mapped[str] = mapped_column(String(64), index=True)
    key: Mapped[str | None] = mapped_column(String(255), nullable=True, index=True)
    payload: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    # queued|running|done|failed
    status: Mapped[str] = mapped_column(String(16), default="queued", index=True)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    error: Mapped[str] = mapped_column(Text, default="")
    # a retried job is not claimed before this (None: at once)
    run_after: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    created_at: Mapped[datetime] = _created()
    updated_at: Mapped[datetime] = _updated()


class GraphEntityRow(Base):
    __tablename__ = "graph_entities"
    id: Mapped[str] = _id()
    tenant_id: Mapped[int] = mapped_column(Integer, index=True)
    knowledge_base_id: Mapped[str] = mapped_column(String(36), index=True)
    knowledge_id: Mapped[str] = mapped_column(String(36), default="")
    name: Mapped[str] = mapped_column(String(512), index=True)
    type: Mapped[str] = mapped_column(String(64), default="")
    description: Mapped[str] = mapped_column(Text, default="")
    chunk_ids: Mapped[list[Any]] = mapped_column(JSON, default=list)
    created_at: Mapped[datetime] = _created()


class GraphRelationRow(Base):
    __tablename__ = "graph_relations"
    id: Mapped[str] = _id()
    tenant_id: Mapped[int] = mapped_column(Integer, index=True)
    knowledge_base_id: Mapped[str] = mapped_column(String(36), index=True)
    source: Mapped[str] = mapped_column(String(512), index=True)
    target: Mapped[str] = mapped_column(String(512), index=True)
    type: Mapped[str] = mapped_column(String(128), default="")
    description: Mapped[str] = mapped_column(Text, default="")
    weight: Mapped[float] = mapped_column(Float, default=1.0)
    chunk_ids: Mapped[list[Any]] = mapped_column(JSON, default=list)
    created_at: Mapped[datetime] = _created()



class KnowledgeBasePinRow(Base):
    """A pinned knowledge base (``PUT /knowledge-bases/:id/pin``): one row while pinned. Per tenant, since
    Knora has tenants, not users (WeKnora pins per user)."""

    __tablename__ = "knowledge_base_pins"
    knowledge_base_id: Mapped[str] = mapped_column(ForeignKey("knowledge_bases.id", ondelete="CASCADE"),
                                                   primary_key=True)
    tenant_id: Mapped[int] = mapped_column(Integer, index=True)
    pinned_at: Mapped[datetime] = _created()


class ChunkRevisionRow(Base):
    """The content a chunk had before an edit through ``PUT /chunks/:kid/:id`` (WeKnora's ``ChunkRevision``);
    the current content stays on the chunk. Gone with the chunk (a re-parse makes new chunks)."""

    __tablename__ = "chunk_revisions"
    __table_args__ = (Index("ux_chunk_revisions_chunk_revision", "chunk_id", "revision", unique=True),)
    id: Mapped[str] = _id()
    tenant_id: Mapped[int] = mapped_column(Integer, index=True)
    knowledge_base_id: Mapped[str] = mapped_column(String(36))
    knowledge_id: Mapped[str] = mapped_column(String(36))
    chunk_id: Mapped[str] = mapped_column(ForeignKey("chunks.id", ondelete="CASCADE"))
    revision: Mapped[int] = mapped_column(Integer)
    content: Mapped[str] = mapped_column(Text)
    is_enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    edit_source: Mapped[str] = mapped_column(String(16), default="manual")
    edited_at: Mapped[datetime] = _created()
    created_at: Mapped[datetime] = _created()



class BlobObjectRow(Base):
    """An uploaded original kept in the database (``KNORA_BLOB_STORE=postgres``,
    knora.adapters.blobs.postgres); its bytes are its ``blob_pieces``. Unused by the other blob stores."""

    __tablename__ = "blob_objects"
    key: Mapped[str] = mapped_column(Text, primary_key=True)
    size: Mapped[int] = mapped_column(BigInteger)
    pieces: Mapped[int] = mapped_column(Integer)
    updated_at: Mapped[datetime] = _created()


class BlobPieceRow(Base):
    """One piece (at most 1 MiB) of a blob, in order of ``seq``."""

    __tablename__ = "blob_pieces"
    key: Mapped[str] = mapped_column(ForeignKey("blob_objects.key", ondelete="CASCADE"), primary_key=True)
    seq: Mapped[int] = mapped_column(Integer, primary_key=True)
    data: Mapped[bytes] = mapped_column(LargeBinary)


metadata = Base.metadata
