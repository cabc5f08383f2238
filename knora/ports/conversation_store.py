"""Repositories of the streaming area: sessions and their messages (spec §7).

Every read is scoped by tenant, so another tenant's session is simply "not found" (404, never 403).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from knora.domain.conversation import HistoryMessage, Message, Session, Viewer


@runtime_checkable
class SessionRepo(Protocol):
    async def create(self, session: Session) -> Session: ...

    async def get(self, tenant_id: int, session_id: str) -> Session | None: ...

    async def list(self, tenant_id: int, *, page: int, page_size: int, keyword: str | None = None,
                   source: str | None = None, agent_id: str | None = None,
                   viewer: Viewer | None = None) -> tuple[list[Session], int]:
        """Pinned first (latest pin first), then most recently updated; with a viewer, only what it sees."""
        ...

    async def update(self, session: Session) -> Session: ...

    async def update_fields(self, tenant_id: int, session_id: str, **fields: Any) -> bool: ...

    async def set_title_if_empty(self, tenant_id: int, session_id: str, title: str) -> bool: ...

    async def delete(self, tenant_id: int, session_ids: Sequence[str], viewer: Viewer | None = None) -> int:
        """Deletes the sessions (the viewer sees) with their messages; returns how many were removed."""
        ...

    async def delete_all(self, tenant_id: int, viewer: Viewer | None = None) -> int: ...


@runtime_checkable
class MessageRepo(Protocol):
    async def create(self, message: Message) -> Message: ...

    async def create_pair(self, user: Message, assistant: Message,
                          session_fields: dict[str, Any] | None = None) -> None:
        """Both messages of a turn in one transaction (a turn never has half its rows), plus optional updates
        of the session row (e.g. ``last_request_state``)."""
        ...

    async def complete(self, message_id: str, fields: dict[str, Any], *, user_message_id: str = "",
                       user_fields: dict[str, Any] | None = None) -> None: ...

    async def get(self, tenant_id: int, message_id: str) -> Message | None: ...

    async def update(self, message: Message) -> Message: ...

    async def update_fields(self, message_id: str, **fields: Any) -> bool: ...

    async def recent(self, session_id: str, limit: int, before: datetime | None = None) -> list[Message]:
        """The last ``limit`` messages (before ``before``), oldest first; user before assistant on equal
        times."""
        ...

    async def history(self, session_id: str, limit: int,
                      exclude_request_id: str = "") -> list[HistoryMessage]:
        """Of the last ``limit`` messages (as ``recent`` counts them), those with a request id other than
        ``exclude_request_id``, oldest first: what the history of the next turn is built from."""
        ...

    async def by_request(self, session_id: str, request_id: str) -> list[Message]: ...

    async def search(self, tenant_id: int, terms: Sequence[str], *, session_ids: Sequence[str] = (),
                     limit: int = 200, viewer: Viewer | None = None) -> list[tuple[Message, str]]:
        """The tenant's completed messages containing every term, newest first, with their session's
        title; with a viewer, only in the sessions it sees."""
        ...

    async def delete(self, session_id: str, message_id: str) -> bool: ...

    async def clear(self, session_id: str) -> int: ...

    async def incomplete(self, *, older_than: datetime | None = None) -> list[Message]: ...

    async def answer_usage(self, tenant_id: int, start: datetime, end: datetime) -> list[tuple[str, Any]]:
        """(model id, ``debug["usage"]`` or None) of the tenant's completed answers created in
        ``[start, end]``."""
        ...


@runtime_checkable
class Conversations(Protocol):
    """A tenant's stored conversations, read by tools that look back at earlier sessions."""

    @property
    def sessions(self) -> SessionRepo: ...

    @property
    def messages(self) -> MessageRepo: ...
