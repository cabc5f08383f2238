"""SQLAlchemy 2 (async) persistence on SQLite and PostgreSQL."""
