"""``knora mcp``: the MCP server on stdin/stdout, spawned as a real process and driven by the SDK's client."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError
from mcp_types import TextResourceContents

from knora.settings import Settings
from tests.api.mcp_server.seed import Seeded, error_text, payload, seed
from tests.conftest import TEST_API_KEY, started
from tests.polling import eventually

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]


def env_for(settings: Settings) -> dict[str, str]:
    return {"KNORA_DATA_DIR": str(settings.data_dir), "KNORA_API_KEY": TEST_API_KEY,
            "KNORA_EMBEDDER": "local:hash", "KNORA_SAMPLE_KB": "false", "KNORA_PARSE_ISOLATION": "thread",
            "PYTHONPATH": str(ROOT)}


@pytest.fixture
async def seeded(make_settings: Callable[..., Settings]) -> tuple[Settings, Seeded]:
    settings = make_settings()
    async with started(settings) as c:
        return settings, await seed(c)


@asynccontextmanager
async def stdio(settings: Settings, *args: str) -> AsyncIterator[Client]:
    params = StdioServerParameters(command=sys.executable, args=["-m", "knora.cli.main", "mcp", *args],
                                   env=env_for(settings), cwd=str(ROOT))
    async with Client(params, read_timeout_seconds=120) as client:
        yield client


async def test_every_tool_over_stdio(seeded: tuple[Settings, Seeded]) -> None:
    settings, data = seeded
    async with stdio(settings) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        kbs = payload(await client.call_tool("list_knowledge_bases", {}))["knowledge_bases"]
        docs = payload(await client.call_tool("list_documents", {"knowledge_base": "handbook"}))
        found = payload(await client.call_tool("search_knowledge", {"query": "solar panel watts"}))
        answer = payload(await client.call_tool("ask", {"question": "How many watts does a solar panel "
                                                                    "produce at peak sun?"}))
        page = payload(await client.call_tool("read_document", {"document_id": data.solar_id}))
        resource = await client.read_resource(f"knora://knowledge/{data.solar_id}")
        added = payload(await client.call_tool("add_document", {"knowledge_base": data.kb_id,
                                                                "title": "Figs",
                                                                "text": "Figs ripen in late summer."}))

        async def searchable() -> bool:  # ingested by the job workers of the mcp process itself
            hits = payload(await client.call_tool("search_knowledge", {"query": "figs ripen summer"}))
            return any(h["document_id"] == added["document"]["id"] for h in hits["results"])

        assert await eventually(searchable)
    assert names == {"list_knowledge_bases", "search_knowledge", "ask", "list_documents", "read_document",
                     "add_document"}
    assert [k["name"] for k in kbs] == ["handbook"]
    assert docs["total"] == 2
    assert found["results"][0]["document_id"] == data.solar_id
    assert "400 watts" in answer["answer"]
    assert answer["sources"][0]["document_id"] == data.solar_id
    assert page["chunks"][0]["content"].startswith("# Solar panels")
    content = resource.contents[0]
    assert isinstance(content, TextResourceContents)
    assert "400 watts at peak sun" in content.text


async def test_bad_input_and_foreign_ids_over_stdio(seeded: tuple[Settings, Seeded]) -> None:
    settings, data = seeded
    async with stdio(settings) as client:
        secret = await client.call_tool("read_document", {"document_id": data.secret_id})
        foreign_kb = await client.call_tool("list_documents", {"knowledge_base": data.other_kb_id})
        missing = await client.call_tool("search_knowledge", {"knowledge_bases": ["handbook"]})
        with pytest.raises(MCPError):
            await client.read_resource(f"knora://knowledge/{data.secret_id}")
        alive = payload(await client.call_tool("list_knowledge_bases", {}))
    assert "not found" in error_text(secret).lower()
    assert "not found" in error_text(foreign_kb).lower()
    assert "query" in error_text(missing)
    assert len(alive["knowledge_bases"]) == 1


async def test_api_key_chooses_the_tenant(seeded: tuple[Settings, Seeded]) -> None:
    settings, data = seeded
    async with stdio(settings, "--api-key", data.other_key) as client:
        kbs = payload(await client.call_tool("list_knowledge_bases", {}))["knowledge_bases"]
        tea = await client.call_tool("read_document", {"document_id": data.tea_id})
        secret = payload(await client.call_tool("read_document", {"document_id": data.secret_id}))
    assert [k["name"] for k in kbs] == ["private"]
    assert "not found" in error_text(tea).lower()
    assert "Bluebird" in secret["chunks"][0]["content"]


def _run(settings: Settings, *args: str, stdin: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "knora.cli.main", "mcp", *args], input=stdin, text=True,
                          capture_output=True, env=env_for(settings), cwd=ROOT, timeout=120)


def test_an_unknown_key_exits_with_a_message(make_settings: Callable[..., Settings]) -> None:
    done = _run(make_settings(), "--api-key", "sk-nobody", stdin="")
    assert done.returncode == 2, done.stderr
    assert "--api-key is not a key of any tenant" in done.stderr
    assert done.stdout == ""


def test_stdout_carries_only_mcp_frames(make_settings: Callable[..., Settings]) -> None:
    """Raw JSON-RPC lines in, and every line out is one JSON-RPC answer (the logs and the first start's key
    went to stderr)."""
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "list_knowledge_bases",
                                                                       "arguments": {}}},
    ]
    settings = make_settings()
    env = {k: v for k, v in env_for(settings).items() if k != "KNORA_API_KEY"}  # first start: a key is made
    proc = subprocess.Popen([sys.executable, "-m", "knora.cli.main", "mcp"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
    assert proc.stdin is not None
    assert proc.stdout is not None
    try:
        proc.stdin.write("".join(json.dumps(m) + "\n" for m in messages))
        proc.stdin.flush()
        lines = [proc.stdout.readline() for _ in range(3)]  # the answers to 1, 2 and 3
        proc.stdin.close()
        rest = proc.stdout.read()  # until the server exits on the end of its input
        assert proc.wait(timeout=60) == 0
        assert proc.stderr is not None
        err = proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
    frames = [json.loads(line) for line in lines]
    assert [f.get("id") for f in frames] == [1, 2, 3], err
    assert all(f["jsonrpc"] == "2.0" and "result" in f for f in frames), frames
    assert frames[2]["result"]["structuredContent"] == {"knowledge_bases": []}
    assert rest == ""
    assert "API key of the default tenant (shown once, keep it): sk-" in err
