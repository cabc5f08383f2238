"""Test doubles that are real implementations of a wire protocol (see model_server.py)."""

from tests.fakes.model_server import FakeModelServer, Reply, fake_embedding, lexical_score

__all__ = ["FakeModelServer", "Reply", "fake_embedding", "lexical_score"]
