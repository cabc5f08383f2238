"""Which exceptions mean "the database cannot answer right now" rather than "this request is wrong".

During a PostgreSQL outage the driver raises a bare ``ConnectionRefusedError`` (SQLAlchemy does not wrap a
failed asyncpg connect), a ``DBAPIError`` with ``connection_invalidated`` for a connection lost mid-query,
or an asyncpg connection error under SQLAlchemy's adapter; SQLite under write contention raises
``OperationalError: database is locked``. None of these is the client's fault or a bug: the API answers 503
with ``Retry-After`` instead of a 500 (issue 20 item 10), and everything else keeps its own mapping.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from typing import Literal

import asyncpg.exceptions as pg
from sqlalchemy import exc as sa

Unavailability = Literal["down", "busy"]

_LOCKED = ("database is locked", "database table is locked", "database is busy")
_PG_DOWN = (pg.PostgresConnectionError, pg.OperatorInterventionError, pg.CannotConnectNowError)
_PG_BUSY = (pg.TooManyConnectionsError,)


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """The exception, what SQLAlchemy wrapped (``orig``) and what it was raised from, without cycles."""
    seen: set[int] = set()
    todo: list[BaseException | None] = [exc]
    while todo and len(seen) < 16:
        cur = todo.pop()
        if cur is None or id(cur) in seen:
            continue
        seen.add(id(cur))
        yield cur
        orig = getattr(cur, "orig", None)
        todo += [orig if isinstance(orig, BaseException) else None, cur.__cause__, cur.__context__]


def unavailability(exc: BaseException) -> Unavailability | None:
    """``busy`` (locked, pool or connection slots exhausted: retry in a moment), ``down`` (cannot connect or
    the connection was lost: retry in a few seconds), or None for every other error."""
    chain = list(_chain(exc))
    if any(isinstance(e, sqlite3.Error) for e in chain):
        # SQLite reports a missing table or a full disk as OperationalError too: only a lock is "retry".
        return "busy" if any(m in str(e).lower() for e in chain for m in _LOCKED) else None
    for e in chain:
        text = str(e).lower()
        if any(m in text for m in _LOCKED) or isinstance(e, (sa.TimeoutError, *_PG_BUSY)):
            return "busy"
        if isinstance(e, sa.DBAPIError) and e.connection_invalidated:
            return "down"
        if isinstance(e, (sa.OperationalError, sa.InterfaceError, sa.DisconnectionError, *_PG_DOWN)):
            return "down"
        if isinstance(e, pg.InterfaceError) and "closed" in text:
            return "down"
        if isinstance(e, (ConnectionError, TimeoutError)) or (
                isinstance(e, OSError) and ("connect call failed" in text or "multiple exceptions" in text)):
            return "down"
    return None
