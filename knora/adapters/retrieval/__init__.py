"""Retrieval engines behind the RetrievalEngine port (SQLite FTS5 + numpy/HNSW, PostgreSQL tsvector +
pgvector)."""
