"""What ``knora ingest`` reads of a document's state: a large document's progress, when its job has one."""

from __future__ import annotations

import pytest

from knora.cli.ingest_backends import done_fraction

pytestmark = pytest.mark.unit


def test_a_reported_progress_is_a_fraction_and_anything_else_is_none() -> None:
    progress = {"stage": "embedding", "done": 250, "total": 1000, "started_at": "2026-12-07T10:00:00Z"}
    assert done_fraction({"progress": progress, "doc_author": "Ann"}) == 0.25
    assert done_fraction({"progress": {**progress, "total": 0}}) is None
    assert done_fraction({"progress": {"stage": "weird"}}) is None  # another server's shape: not shown
    assert done_fraction({}) is None
    assert done_fraction(None) is None
