"""``knora kb``, ``knora ingest`` and ``knora serve`` on a private data dir."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from knora.cli.ingest import collect
from knora.cli.main import build_parser, main

pytestmark = pytest.mark.integration


def _json(capsys: pytest.CaptureFixture[str]) -> object:
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def test_kb_create_list_delete(env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["kb", "create", "Handbook", "--chunk-size", "300", "--json"]) == 0
    created = _json(capsys)
    assert created["name"] == "Handbook"  # type: ignore[index]
    assert created["chunking_config"]["chunk_size"] == 300  # type: ignore[index]
    assert main(["kb", "create", "Handbook"]) == 1
    capsys.readouterr()
    assert main(["kb", "list", "--json"]) == 0
    listed = _json(capsys)
    assert [k["name"] for k in listed] == ["Handbook"]  # type: ignore[union-attr]
    assert main(["kb", "delete", "Handbook", "--json"]) == 0
    capsys.readouterr()
    assert main(["kb", "list", "--json"]) == 0
    assert _json(capsys) == []
    assert main(["kb", "delete", "Handbook"]) == 1


def test_ingest_files_and_folders_with_json_summary(env: Path, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / "a.md").write_text("# Alpha\n\nAlpha is the first letter.")
    (docs / "sub" / "b.txt").write_text("Beta is the second letter.")
    (docs / "sub" / "empty.txt").write_text("")
    (docs / "drawing.dwg").write_bytes(b"AC1032\x00\x00\x06\x00" + bytes(range(256)))  # binary: refused
    (docs / ".hidden.md").write_text("secret")
    single = tmp_path / "c.csv"
    single.write_text("name,value\ngamma,3\n")
    code = main(["ingest", "--kb", "Letters", str(docs), str(single), str(tmp_path / "missing"), "--json"])
    summary = _json(capsys)
    assert summary["knowledge_base"]["created"] is True  # type: ignore[index]
    assert summary["completed"] == 3  # type: ignore[index]
    assert summary["skipped"] == 2  # type: ignore[index]
    assert summary["failed"] == 1  # type: ignore[index]
    assert code == 1  # the empty file failed
    by_source = {Path(i["source"]).name: i for i in summary["items"]}  # type: ignore[index]
    assert by_source["a.md"]["title"] == "Alpha"
    assert by_source["a.md"]["chunks"] >= 1
    assert by_source["empty.txt"]["status"] == "failed"
    assert main(["ingest", "--kb", "Letters", str(docs / "a.md"), "--json"]) == 0
    again = _json(capsys)
    assert again["duplicate"] == 1  # type: ignore[index]
    assert again["knowledge_base"]["created"] is False  # type: ignore[index]


def test_collect_skips_hidden_and_unsupported(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "x.md").write_text("x")
    (tmp_path / "ok.md").write_text("ok")
    (tmp_path / "no.bin").write_text("no")
    sources, skipped = collect([str(tmp_path), "https://example.org/page"], frozenset({"md"}))
    assert sources == [tmp_path / "ok.md", "https://example.org/page"]
    assert [Path(s["source"]).name for s in skipped] == ["no.bin"]


def test_other_areas_commands_are_registered() -> None:
    commands = build_parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    assert {"serve", "kb", "ingest"} <= set(commands)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.slow
def test_serve_prints_url_and_generated_key_once(tmp_path: Path) -> None:
    port = _free_port()
    env = {**os.environ, "KNORA_DATA_DIR": str(tmp_path / "srv"), "KNORA_EMBEDDER": "local:hash",
           "KNORA_SAMPLE_KB": "false"}
    env.pop("KNORA_API_KEY", None)
    env.pop("KNORA_DATABASE_URL", None)
    cmd = [sys.executable, "-m", "knora.cli.main", "serve", "--port", str(port)]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        lines: list[str] = []
        assert proc.stdout is not None
        key = None
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and key is None:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
            if "API key" in line:
                key = line.rsplit(" ", 1)[-1].strip()
        assert key, lines
        assert key.startswith("sk-"), lines
        assert any(f"http://127.0.0.1:{port}" in ln for ln in lines)
        for _ in range(200):
            try:
                r = httpx.get(f"http://127.0.0.1:{port}/api/v1/knowledge-bases", headers={"X-API-Key": key})
                break
            except httpx.TransportError:
                time.sleep(0.1)
        assert r.status_code == 200
        assert r.json() == {"success": True, "data": []}
    finally:
        proc.terminate()
        proc.wait(timeout=30)
