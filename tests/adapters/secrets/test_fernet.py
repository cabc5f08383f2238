"""The Fernet secret box: sealed values carry a prefix, open with any configured key, reseal with the current
one; a value no key opens is a clear error, never garbage."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from knora.adapters.secrets.fernet import KEY_FILE, FernetBox, local_key, new_key
from knora.ports.secrets import SEALED_PREFIX, SecretError

pytestmark = pytest.mark.unit


def test_seal_and_open() -> None:
    box = FernetBox([new_key()])
    sealed = box.seal("sk-live-123")
    assert sealed.startswith(SEALED_PREFIX)
    assert "sk-live-123" not in sealed
    assert box.seal("sk-live-123") != sealed  # a fresh IV each time
    assert box.open(sealed) == "sk-live-123"
    assert box.seal("") == ""
    assert box.open("plain, from before sealing") == "plain, from before sealing"


def test_rotation_keeps_old_values_readable_until_resealed() -> None:
    old, new = new_key(), new_key()
    sealed_old = FernetBox([old]).seal("token")
    both = FernetBox([new, old])
    assert both.open(sealed_old) == "token"
    resealed = both.reseal(sealed_old)
    assert FernetBox([new]).open(resealed) == "token"
    with pytest.raises(SecretError, match="KNORA_SECRET_KEY"):
        FernetBox([new]).open(sealed_old)
    assert FernetBox([new]).open(FernetBox([new]).reseal("plain")) == "plain"  # plain values get sealed


def test_a_bad_key_is_refused_with_the_fix() -> None:
    with pytest.raises(ValueError, match="knora secrets new-key"):
        FernetBox(["not-a-key"])


def test_the_embedded_default_keeps_its_key_in_the_data_dir(tmp_path: Path) -> None:
    key = local_key(tmp_path / "data")
    path = tmp_path / "data" / KEY_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert local_key(tmp_path / "data") == key  # made once, then read
    FernetBox([key])  # a valid key


def test_processes_starting_at_once_share_one_key(tmp_path: Path) -> None:
    """The first to link its key file in place wins; the others read it (none replaces a key in use)."""
    import concurrent.futures

    data = tmp_path / "data"
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        keys = set(pool.map(lambda _: local_key(data), range(8)))
    assert len(keys) == 1
    assert [p.name for p in data.iterdir()] == [KEY_FILE]  # no temporary file left behind
