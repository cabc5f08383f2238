"""``knora.cli.discovery``: the record and key files ``knora serve`` writes; how a stale record is told."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from knora.cli import discovery
from knora.cli.client import ApiError, error_message, find_server
from knora.cli.serve import local_url
from knora.settings import ClientSettings

pytestmark = pytest.mark.unit


@pytest.fixture(autouse=True)
def _no_server_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("KNORA_URL", "KNORA_API_KEY", "KNORA_CONFIG_FILE"):
        monkeypatch.delenv(name, raising=False)


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _record(data_dir: Path, record: dict[str, object]) -> None:
    discovery.write_private(data_dir / discovery.RECORD_FILE, json.dumps(record))


class TestFiles:
    def test_record_and_key_are_owner_only_and_round_trip(self, tmp_path: Path) -> None:
        discovery.write_record(tmp_path, "http://127.0.0.1:8080", "0.1.0")
        discovery.write_key(tmp_path, "sk-secret")
        for name in (discovery.RECORD_FILE, discovery.KEY_FILE):
            assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o600
        assert discovery.read_record(tmp_path) == discovery.ServerRecord("http://127.0.0.1:8080", os.getpid())
        assert discovery.read_key(tmp_path) == "sk-secret"
        assert sorted(p.name for p in tmp_path.iterdir()) == ["cli.key", "server.json"]  # no temp file left

    def test_a_record_is_removed_only_by_the_process_it_names(self, tmp_path: Path) -> None:
        _record(tmp_path, {"url": "http://127.0.0.1:1", "pid": 1})
        assert discovery.read_record(tmp_path) is not None
        discovery.remove_record(tmp_path)
        assert (tmp_path / discovery.RECORD_FILE).exists()
        discovery.write_record(tmp_path, "http://127.0.0.1:2", "0.1.0")
        discovery.remove_record(tmp_path)
        assert not (tmp_path / discovery.RECORD_FILE).exists()

    def test_files_others_may_read_or_write_are_not_trusted(self, tmp_path: Path) -> None:
        discovery.write_record(tmp_path, "http://127.0.0.1:8080", "0.1.0")
        discovery.write_key(tmp_path, "sk-secret")
        for name, mode in ((discovery.RECORD_FILE, 0o620), (discovery.KEY_FILE, 0o644)):
            (tmp_path / name).chmod(mode)
        assert discovery.read_record(tmp_path) is None  # another user's record could name their server
        assert discovery.read_key(tmp_path) is None  # and knora serve replaces a key others could read

    @pytest.mark.parametrize("text", ["", "not json", "[]", '{"url": "ftp://x", "pid": 1}',
                                      '{"url": "http://x"}', '{"url": "http://x", "pid": "1"}'])
    def test_a_broken_record_is_no_record(self, tmp_path: Path, text: str) -> None:
        discovery.write_private(tmp_path / discovery.RECORD_FILE, text)
        assert discovery.read_record(tmp_path) is None


@pytest.mark.integration  # a real process, a real closed port
class TestStaleness:
    def test_a_dead_process_is_stale(self, tmp_path: Path) -> None:
        record = {"url": "http://127.0.0.1:9", "pid": _dead_pid()}
        _record(tmp_path, record)
        assert discovery.read_record(tmp_path) is not None
        assert discovery.live_record(tmp_path) is None

    def test_a_live_process_that_does_not_answer_is_stale(self, tmp_path: Path) -> None:
        url = f"http://127.0.0.1:{_closed_port()}"
        _record(tmp_path, {"url": url, "pid": os.getpid()})
        assert discovery.read_record(tmp_path) is not None
        assert discovery.live_record(tmp_path) is None


class TestFindServer:
    def test_knora_url_is_used_as_given_without_the_local_key(self, tmp_path: Path) -> None:
        discovery.write_key(tmp_path, "sk-local")
        discovery.write_record(tmp_path, "http://127.0.0.1:8080", "0.1.0")
        far = find_server(ClientSettings(data_dir=tmp_path, url="https://knora.example.org/"))
        assert far is not None
        assert (far.url, far.key, far.source) == ("https://knora.example.org", None, "KNORA_URL")
        # the recorded server named by KNORA_URL gets the local key; KNORA_API_KEY wins over it
        near = find_server(ClientSettings(data_dir=tmp_path, url="http://127.0.0.1:8080"))
        assert near is not None
        assert near.key == "sk-local"
        chosen = find_server(ClientSettings(data_dir=tmp_path, url="http://127.0.0.1:8080",
                                            api_key="sk-mine"))
        assert chosen is not None
        assert chosen.key == "sk-mine"

    def test_no_record_no_server(self, tmp_path: Path) -> None:
        assert find_server(ClientSettings(data_dir=tmp_path)) is None

    def test_a_url_that_is_not_http_is_refused(self, tmp_path: Path) -> None:
        with pytest.raises(ValueError, match="http:// or https://"):
            ClientSettings(data_dir=tmp_path, url="127.0.0.1:8080")


@pytest.mark.parametrize(("host", "url"), [("127.0.0.1", "http://127.0.0.1:80"), ("0.0.0.0", "http://127.0.0.1:80"),
                                           ("::", "http://[::1]:80"), ("::1", "http://[::1]:80"),
                                           ("myhost", "http://myhost:80")])
def test_the_url_a_local_client_reaches(host: str, url: str) -> None:
    assert local_url(host, 80) == url


@pytest.mark.parametrize(("body", "message"), [
    ({"success": False, "error": {"code": 1, "message": "Not allowed"}}, "Not allowed"),
    ({"error": "Session not found"}, "Session not found"), ({"message": "Invalid"}, "Invalid"),
    ({"detail": "Not Found"}, "Not Found"), ("plain", "HTTP 500")])
def test_error_messages_of_every_shape(body: object, message: str) -> None:
    assert error_message(body, "HTTP 500") == message
    assert ApiError(message, 404).status == 404
