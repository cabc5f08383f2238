"""Alembic environment: runs on the connection handed over by knora.adapters.db.engine.migrate."""

from __future__ import annotations

from alembic import context

from knora.adapters.db.tables import metadata

connection = context.config.attributes.get("connection")
if connection is None:  # pragma: no cover - only for `alembic` on the command line
    raise RuntimeError("run migrations through knora.adapters.db.engine.migrate")

context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
