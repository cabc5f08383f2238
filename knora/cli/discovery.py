"""Where a running ``knora serve`` listens, and the key the CLI on its machine calls it with.

``knora serve`` writes two files into its data dir once uvicorn listens, both owner-only (0600) and written
atomically (a reader sees the old file or the whole new one):

- ``server.json``: ``{"url", "pid", "started_at", "version"}``. Removed on a clean shutdown (only by the
  process it names: a second server on the same data dir keeps the file of the one that wrote it last).
  A file whose process is gone, or whose ``/health`` does not answer, is stale and ignored.
- ``cli.key``: a key of the default tenant (the tenant the in-process CLI acts as), stored hashed in the
  database like every key. It outlives the server, so a restart keeps it; a server that finds it invalid
  (another database, a deleted key) mints a new one, which revokes the last.

The CLI sends ``cli.key`` only to the server ``server.json`` names, never to a ``KNORA_URL`` elsewhere, and
trusts either file only when it belongs to the user running the CLI and nobody else may read or write it: a
``server.json`` planted by another user (naming a server of theirs) would otherwise collect the key. This
module is read on the CLI's fast path: standard library (and httpx, for ``/health``) only.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

RECORD_FILE = "server.json"
KEY_FILE = "cli.key"
HEALTH_TIMEOUT_S = 3.0


@dataclass(frozen=True)
class ServerRecord:
    url: str
    pid: int


def write_private(path: Path, text: str) -> None:
    """``text`` into ``path``, readable by the owner only, atomically (a temp file beside it, renamed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def write_record(data_dir: Path, url: str, version: str) -> None:
    write_private(data_dir / RECORD_FILE, json.dumps({"url": url, "pid": os.getpid(),
                                                      "started_at": time.time(), "version": version}))


def remove_record(data_dir: Path) -> None:
    """Removes ``server.json`` if this process wrote it."""
    path = data_dir / RECORD_FILE
    record = read_record(data_dir)
    if record is not None and record.pid == os.getpid():
        with contextlib.suppress(OSError):
            path.unlink()


def private(path: Path) -> bool:
    """Whether ``path`` is this user's and no one else's (0600 or stricter); on a system without POSIX
    owners, whether it exists."""
    try:
        st = path.stat()
    except OSError:
        return False
    getuid = getattr(os, "getuid", None)
    if getuid is None:
        return True
    return st.st_uid == getuid() and st.st_mode & 0o077 == 0


def read_record(data_dir: Path) -> ServerRecord | None:
    """The recorded server, or None when there is no file, it is not one this module wrote, or it is not
    private (``private``)."""
    path = data_dir / RECORD_FILE
    if not private(path):
        return None
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(raw, dict):
        return None
    url, pid = raw.get("url"), raw.get("pid")
    if not isinstance(url, str) or not url.startswith(("http://", "https://")) or not isinstance(pid, int):
        return None
    return ServerRecord(url=url.rstrip("/"), pid=pid)


def read_key(data_dir: Path) -> str | None:
    """The CLI key, or None when there is none or the file is not private (then ``knora serve`` replaces
    it: a key others could read is not kept)."""
    path = data_dir / KEY_FILE
    if not private(path):
        return None
    try:
        key = path.read_text(encoding="utf-8").strip()
    except OSError:
        return None
    return key or None


def write_key(data_dir: Path, key: str) -> None:
    write_private(data_dir / KEY_FILE, key + "\n")


def pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, another user's
        return True
    except OSError:
        return False
    return True


def answers(url: str, timeout: float = HEALTH_TIMEOUT_S) -> bool:
    """Whether a Knora server answers ``GET {url}/health``."""
    import httpx

    try:
        # certificates are loaded (tens of milliseconds) only for an https:// server
        r = httpx.get(f"{url}/health", timeout=timeout, verify=url.startswith("https://"))
    except httpx.HTTPError:
        return False
    return r.status_code == 200


def live_record(data_dir: Path) -> ServerRecord | None:
    """The recorded server when it is running (its process exists and it answers), else None."""
    record = read_record(data_dir)
    if record is None or not pid_alive(record.pid) or not answers(record.url):
        return None
    return record
