"""The CLI's tests run its commands in this process, configured by environment variables as a user would."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh data dir, the fast hashing embedder, no sample KB, a fixed key, no database URL or chat model
    from the caller's environment; returns the data dir."""
    data = tmp_path / "data"
    monkeypatch.setenv("KNORA_DATA_DIR", str(data))
    monkeypatch.setenv("KNORA_EMBEDDER", "local:hash")
    monkeypatch.setenv("KNORA_SAMPLE_KB", "false")
    monkeypatch.setenv("KNORA_API_KEY", "sk-cli-test")
    monkeypatch.delenv("KNORA_DATABASE_URL", raising=False)
    monkeypatch.delenv("KNORA_CHAT_MODEL", raising=False)
    return data
