"""Fernet (AES-128-CBC + HMAC-SHA256, from ``cryptography``) with key rotation: the first key seals, every
key opens, so values sealed before a rotation stay readable until ``knora secrets rotate`` reseals them."""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
from pathlib import Path
from secrets import token_hex

from cryptography.fernet import Fernet, InvalidToken, MultiFernet

from knora.ports.secrets import SEALED_PREFIX, SecretError
from knora.settings import Settings

log = logging.getLogger(__name__)

KEY_FILE = "secret.key"


class FernetBox:
    def __init__(self, keys: list[str]) -> None:
        if not keys:
            raise ValueError("a secret box needs at least one key")
        try:
            self._fernet = MultiFernet([Fernet(k.encode()) for k in keys])
        except ValueError as exc:
            raise ValueError("KNORA_SECRET_KEY must be a Fernet key: 32 url-safe base64 bytes, as "
                             "`knora secrets new-key` prints") from exc
        self._current = keys[0].encode()

    def derive(self, purpose: str) -> bytes:
        return hmac.new(self._current, b"knora:" + purpose.encode(), hashlib.sha256).digest()

    def seal(self, plain: str) -> str:
        if not plain:
            return plain
        return SEALED_PREFIX + self._fernet.encrypt(plain.encode()).decode()

    def open(self, stored: str) -> str:
        if not stored.startswith(SEALED_PREFIX):
            return stored
        try:
            return self._fernet.decrypt(stored[len(SEALED_PREFIX):].encode()).decode()
        except InvalidToken as exc:
            raise SecretError("a stored credential cannot be opened with the configured KNORA_SECRET_KEY (or "
                              "KNORA_PREVIOUS_SECRET_KEYS): was the key changed without a rotation?") from exc

    def reseal(self, stored: str) -> str:
        if not stored.startswith(SEALED_PREFIX):
            return self.seal(stored)
        try:
            return SEALED_PREFIX + self._fernet.rotate(stored[len(SEALED_PREFIX):].encode()).decode()
        except InvalidToken as exc:
            raise SecretError("a stored credential cannot be opened with any configured key") from exc


def new_key() -> str:
    return Fernet.generate_key().decode()


def local_key(data_dir: Path) -> str:
    """The embedded default's key: ``<data_dir>/secret.key`` (0600), made on first start. Replicas must share
    one key instead (``KNORA_SECRET_KEY``): each would otherwise seal with a key the others do not have."""
    path = data_dir / KEY_FILE
    if path.exists():
        return path.read_text(encoding="utf-8").strip()
    data_dir.mkdir(parents=True, exist_ok=True)
    # written whole beside it, then linked into place: two processes starting at once never see half a key,
    # and the one whose link fails uses the other's (a rename would let the last writer replace a key the
    # first one may already have sealed with)
    tmp = path.with_name(f".{KEY_FILE}.{token_hex(6)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(new_key() + "\n")
        try:
            os.link(tmp, path)
            log.info("made %s: the key that seals stored credentials (keep it with the database)", path)
        except FileExistsError:
            pass
    finally:
        tmp.unlink(missing_ok=True)
    return path.read_text(encoding="utf-8").strip()


def build(settings: Settings) -> FernetBox:
    """The box of ``settings``: ``secret_key`` (else the data dir's key file) seals; it and every
    ``previous_secret_keys`` entry open."""
    current = (settings.secret_key.get_secret_value() if settings.secret_key is not None
               else local_key(settings.data_dir))
    return FernetBox([current, *(k.get_secret_value() for k in settings.previous_secret_keys)])


def replica_problem(settings: Settings) -> str | None:
    """Why these settings cannot serve several replicas, or None: each replica would make a key file of its
    own, and a credential one of them sealed would not open on the others."""
    if not settings.several_replicas or settings.secret_key is not None:
        return None
    return ("these settings run several replicas but KNORA_SECRET_KEY is not set: each would seal stored "
            "credentials with a key only it has. Set the same KNORA_SECRET_KEY on every replica "
            "(`knora secrets new-key` makes one; docs/deploy.md).")
