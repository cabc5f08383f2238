"""Behaviour lives here: pipeline, agent, retrieval, ingest, sessions and streaming."""
