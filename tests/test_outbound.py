"""Issue 20 item 4: one outbound policy for every call Knora makes — model, embedder, reranker, MCP and web
search URLs as well as fetched pages.

A loopback recorder stands in for an internal host: URLs tenants store through the API (model rows, MCP
services) must not reach it unless the operator allow-lists it (refused with 400 on save, and with a clear
error on use for a row stored before the policy), while URLs from the operator's settings still reach local
models. Link-local and cloud metadata addresses are refused under every policy. A garbage answer from an
embedding endpoint ends ingestion with a reason that names the provider and what was wrong.
"""

from __future__ import annotations

import ipaddress
import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest
from pydantic import ValidationError

from knora import netguard
from knora.adapters.embedders._http import EmbeddingReplyError
from knora.adapters.embedders.ollama import OllamaEmbedder
from knora.adapters.embedders.openai import OpenAIEmbedder
from knora.adapters.llm.registry import ModelUrlRefused
from knora.domain.mcp import MCPService
from knora.domain.models import ModelConfig
from knora.netguard import OPERATOR, PRIVATE_ALLOWED, AddressRefused, tenant_policy
from knora.ports.chat import ChatMessage, ModelError
from knora.settings import Settings
from tests.conftest import client_for, started
from tests.fakes.model_server import FakeModelServer, Reply
from tests.polling import eventually

pytestmark = pytest.mark.integration


# --- the policy ------------------------------------------------------------------------------------------

def _ip(text: str) -> netguard.IPAddress:
    return ipaddress.ip_address(text)


@pytest.mark.parametrize("address", ["169.254.169.254", "169.254.0.1", "100.100.100.200", "fe80::1",
                                     "fd00:ec2::254", "::ffff:169.254.169.254", "64:ff9b::a9fe:a9fe"])
def test_link_local_and_metadata_are_refused_under_every_policy(address: str) -> None:
    generous = tenant_policy(["169.254.0.0/16", "0.0.0.0/0", "::/0", "100.100.100.200"], allow_private=True)
    for policy in (OPERATOR, PRIVATE_ALLOWED, generous, netguard.PUBLIC_ONLY):
        assert not policy.permits("h", 80, _ip(address)), (policy.name, address)


def test_tenant_urls_reach_only_public_and_allow_listed_addresses() -> None:
    closed = tenant_policy([])
    assert closed.permits("api.example", 443, _ip("93.184.215.14"))
    for address in ("127.0.0.1", "10.0.0.5", "192.168.1.1", "100.64.0.1", "::1"):
        assert not closed.permits("h", 80, _ip(address))
        assert OPERATOR.permits("h", 80, _ip(address))  # the operator's own settings may name local models
    listed = tenant_policy(["127.0.0.1:11434", "10.0.0.0/8", "ollama.internal", "[::1]:8000"])
    assert listed.permits("127.0.0.1", 11434, _ip("127.0.0.1"))
    assert not listed.permits("127.0.0.1", 8080, _ip("127.0.0.1"))  # the port is part of the rule
    assert listed.permits("vllm", 8000, _ip("10.9.8.7"))
    assert listed.permits("Ollama.Internal", 80, _ip("172.16.0.9"))  # a name rule trusts the name
    assert listed.permits("h", 8000, _ip("::1"))
    assert not listed.permits("other.internal", 80, _ip("172.16.0.9"))
    assert tenant_policy([], allow_private=True).permits("h", 80, _ip("192.168.0.2"))


async def test_a_name_with_one_refused_answer_is_refused() -> None:
    async def mixed(host: str, port: int) -> list[str]:
        return ["93.184.215.14", "169.254.169.254"]

    with pytest.raises(AddressRefused, match="link-local or cloud metadata"):
        await OPERATOR.check_url("http://mixed.test/", mixed)


def test_allow_list_entries_are_checked_at_start() -> None:
    with pytest.raises(ValidationError, match="host, host:port or CIDR"):
        Settings(outbound_allowed_hosts=["127.0.0.1:port"])
    assert Settings(outbound_allowed_hosts=["10.0.0.0/8", "ollama:11434"]).outbound_allowed_hosts


async def test_the_pinned_transport_refuses_metadata_even_when_private_is_allowed() -> None:
    hits: list[httpx.Request] = []
    never = httpx.MockTransport(lambda req: hits.append(req) or httpx.Response(200))
    async with httpx.AsyncClient(transport=PRIVATE_ALLOWED.transport(inner=never)) as client:
        with pytest.raises(AddressRefused, match="169.254.169.254"):
            await client.get("http://169.254.169.254/latest/meta-data/")
        assert (await client.get("http://10.1.2.3/")).status_code == 200
    assert [str(r.url) for r in hits] == ["http://10.1.2.3/"]


# --- a loopback recorder --------------------------------------------------------------------------------

class _Recorder(BaseHTTPRequestHandler):
    hits: list[str]
    answer: Callable[[str, bytes], tuple[int, str, bytes]]

    def _any(self) -> None:
        self.hits.append(f"{self.command} {self.path}")
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        status, ctype, payload = self.answer(self.path, body)
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = do_DELETE = _any

    def log_message(self, *args: Any) -> None:
        return


class Recorder:
    """An HTTP server on 127.0.0.1 that records every request and answers with ``answer(path, body)``."""

    def __init__(self, answer: Callable[[str, bytes], tuple[int, str, bytes]] | None = None) -> None:
        self.hits: list[str] = []
        handler = type("Handler", (_Recorder,), {
            "hits": self.hits,
            "answer": staticmethod(answer or (lambda path, body: (200, "application/json", b"{}")))})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    r = Recorder()
    yield r
    r.close()


def _refused(r: httpx.Response) -> str:
    assert r.status_code == 400, r.text
    body = r.json()
    assert body["success"] is False
    message = str(body["error"]["message"])
    assert "not allowed" in message
    return message


async def _upload_and_settle(http: httpx.AsyncClient, kb_id: str) -> dict[str, Any] | None:
    """Uploads a small Markdown file to the KB and waits until its parse completes or fails."""
    up = (await http.post(f"/api/v1/knowledge-bases/{kb_id}/knowledge/file",
                          files={"file": ("a.md", b"# A\n\nSome text to embed.")})).json()["data"]

    async def settled() -> dict[str, Any] | None:
        doc: dict[str, Any] = (await http.get(f"/api/v1/knowledge/{up['id']}")).json()["data"]
        return doc if doc["parse_status"] in ("completed", "failed") else None

    return await eventually(settled)


# --- tenant URLs through the API ------------------------------------------------------------------------

class TestEmbeddedDefault:
    def test_loopback_follows_the_profile_unless_set(self) -> None:
        """One machine on SQLite: its user is the operator, so a local Ollama added through the UI may be
        reached; the scale profile (PostgreSQL) allows only what is listed; the setting overrides both."""
        embedded = Settings(sample_kb=False)
        scale = Settings(sample_kb=False, database_url="postgresql+asyncpg://knora@db/knora")
        assert "127.0.0.0/8" in embedded.effective_outbound_allowed_hosts
        assert scale.effective_outbound_allowed_hosts == []
        assert Settings(sample_kb=False, outbound_allow_loopback=False).effective_outbound_allowed_hosts == []
        closed = Settings(sample_kb=False, outbound_allow_loopback=False)
        assert "::1" not in closed.effective_outbound_allowed_hosts

    async def test_a_loopback_model_row_is_accepted_on_the_embedded_default(
            self, make_settings: Callable[..., Settings], recorder: Recorder) -> None:
        settings = make_settings(outbound_allowed_hosts=[], outbound_allow_loopback=None)
        async with started(settings) as c, client_for(c) as http:
            r = await http.post("/api/v1/models", json={"name": "local", "type": "chat",
                                                        "parameters": {"base_url": f"{recorder.url}/v1"}})
            assert r.status_code in (200, 201), r.text
            link_local = await http.post("/api/v1/models", json={
                "name": "meta", "type": "chat", "parameters": {"base_url": "http://169.254.169.254/v1"}})
            assert link_local.status_code == 400


class TestTenantUrls:
    async def test_model_rows_and_mcp_services_pointing_inside_are_refused_on_save(
            self, make_settings: Callable[..., Settings], recorder: Recorder) -> None:
        async with started(make_settings(outbound_allowed_hosts=[])) as c, client_for(c) as http:
            for type_ in ("chat", "embedding", "rerank"):
                message = _refused(await http.post("/api/v1/models", json={
                    "name": "m", "type": type_, "parameters": {"base_url": f"{recorder.url}/v1"}}))
                assert "KNORA_OUTBOUND_ALLOWED_HOSTS" in message  # says how the operator allows it
            _refused(await http.post("/api/v1/models", json={"name": "qwen", "type": "chat",
                                                              "parameters": {"provider": "ollama"}}))
            for transport in ("http-streamable", "sse"):
                _refused(await http.post("/api/v1/mcp-services", json={
                    "name": "inside", "transport_type": transport, "url": f"{recorder.url}/mcp"}))
            ok = await http.post("/api/v1/models", json={"name": "m", "type": "chat",
                                                         "parameters": {"base_url": "https://93.184.215.14/v1"}})
            assert ok.status_code in (200, 201), ok.text
            row = ok.json()["data"]["id"]
            _refused(await http.put(f"/api/v1/models/{row}", json={
                "parameters": {"base_url": f"{recorder.url}/v1"}}))
            service = await http.post("/api/v1/mcp-services", json={
                "name": "outside", "transport_type": "sse", "url": "https://93.184.215.14/mcp"})
            assert service.status_code in (200, 201), service.text
            _refused(await http.put(f"/api/v1/mcp-services/{service.json()['data']['id']}",
                                    json={"url": f"{recorder.url}/mcp"}))
        assert recorder.hits == []

    async def test_metadata_is_refused_even_when_tenants_may_reach_private_addresses(
            self, make_settings: Callable[..., Settings]) -> None:
        settings = make_settings(outbound_allow_private=True, outbound_allowed_hosts=["169.254.0.0/16"])
        async with started(settings) as c, client_for(c) as http:
            for url in ("http://169.254.169.254/v1", "http://[::ffff:169.254.169.254]/v1",
                        "http://100.100.100.200/v1"):
                message = _refused(await http.post("/api/v1/models", json={
                    "name": "m", "type": "chat", "parameters": {"base_url": url}}))
                assert "link-local or cloud metadata" in message
                _refused(await http.post("/api/v1/mcp-services", json={"name": "md", "transport_type": "sse",
                                                                      "url": url}))
            ok = await http.post("/api/v1/models", json={"name": "m", "type": "chat",
                                                         "parameters": {"base_url": "http://10.0.0.5/v1"}})
            assert ok.status_code in (200, 201), ok.text

    async def test_an_allow_listed_host_may_be_saved(self, make_settings: Callable[..., Settings],
                                                     recorder: Recorder) -> None:
        port = recorder.url.rsplit(":", 1)[1]
        async with started(make_settings(outbound_allowed_hosts=[f"127.0.0.1:{port}"])) as c, \
                client_for(c) as http:
            ok = await http.post("/api/v1/models", json={"name": "m", "type": "chat",
                                                         "parameters": {"base_url": f"{recorder.url}/v1"}})
            assert ok.status_code in (200, 201), ok.text
            _refused(await http.post("/api/v1/models", json={"name": "m", "type": "chat",
                                                              "parameters": {"base_url": "http://127.0.0.1:1/v1"}}))

    async def test_rows_stored_before_the_policy_fail_clearly_on_use(
            self, make_settings: Callable[..., Settings], recorder: Recorder) -> None:
        async with started(make_settings(outbound_allowed_hosts=[])) as c, client_for(c) as http:
            params = {"base_url": f"{recorder.url}/v1", "provider": "openai"}
            chat = await c.repos.models.create(ModelConfig(tenant_id=1, name="c", type="KnowledgeQA",
                                                           parameters=params))
            rerank = await c.repos.models.create(ModelConfig(tenant_id=1, name="r", type="Rerank",
                                                             parameters=params))
            embed = await c.repos.models.create(ModelConfig(tenant_id=1, name="e", type="Embedding",
                                                            parameters={**params, "dimension": 8}))
            c.embedders.remember(embed)
            with pytest.raises(ModelUrlRefused, match="not a public address"):
                await c.chat_models.get(chat.id, tenant_id=1)
            with pytest.raises(ModelUrlRefused, match="not a public address"):
                await c.rerankers.get(rerank.id, tenant_id=1)
            # a chat client built before the policy changed is still pinned: the refusal, not a connection
            client = c.chat_models.from_row(chat)
            with pytest.raises(ModelError, match="not a public address") as info:
                await client.chat([ChatMessage(role="user", content="hi")])
            assert not info.value.transient

            kb = (await http.post("/api/v1/knowledge-bases", json={"name": "kb"})).json()["data"]
            await c.repos.kbs.update(
                (await c.repos.kbs.get(1, kb["id"])).model_copy(update={"embedding_model_id": embed.id}))
            doc = await _upload_and_settle(http, kb["id"])
            assert doc is not None
            assert doc["parse_status"] == "failed"
            assert "embedding provider openai:e" in doc["error_message"]
            assert "not a public address" in doc["error_message"]
            assert "Internal error" not in doc["error_message"]

            service = MCPService(tenant_id=1, name="old", transport_type="http-streamable",
                                 url=f"{recorder.url}/mcp")
            reachable, message, tools = await c.mcp_toolset.probe(service)
            assert (reachable, tools) == (False, [])
            assert "cannot be used" in message
            assert "not a public address" in message
        assert recorder.hits == []


# --- the operator's own URLs ---------------------------------------------------------------------------

async def test_operator_configured_loopback_models_still_work(make_settings: Callable[..., Settings]) -> None:
    with FakeModelServer() as fake:
        fake.script([Reply(content="local answer")])
        settings = make_settings(outbound_allowed_hosts=[], chat_model="openai:fake-chat",
                                 chat_base_url=fake.base_url, embedder="openai:fake-embed",
                                 embedder_base_url=fake.base_url, rerank_model="jina:fake-rerank",
                                 rerank_base_url=fake.base_url)
        async with started(settings) as c:
            model = await c.chat_models.get(None, tenant_id=1)
            assert (await model.chat([ChatMessage(role="user", content="hi")])).content == "local answer"
            vectors = await c.embedders.default.embed_passages(["one", "two"])
            assert vectors.shape[0] == 2
            reranker = await c.rerankers.get(None)
            assert reranker is not None
            assert len(await reranker.rerank("q", ["a", "b"])) == 2
        paths = [path for path, _ in fake.calls]
        assert any(p.endswith("/chat/completions") for p in paths)
        assert any(p.endswith("/embeddings") for p in paths)
        assert any(p.endswith("/rerank") for p in paths)


# --- garbage from an embedding endpoint -----------------------------------------------------------------

GARBAGE = {
    "a JSON string": (200, "application/json", b'"oops"', "unexpected answer"),
    "an HTML page": (200, "text/html", b"<html>gateway</html>", "unexpected answer"),
    "data not a list": (200, "application/json", b'{"data": "x"}', "unexpected answer"),
    "a vector of strings": (200, "application/json",
                            b'{"data": [{"index": 0, "embedding": ["a", "b"]}]}', "not a finite number"),
    "the wrong dimension": (200, "application/json",
                            b'{"data": [{"index": 0, "embedding": [0.1, 0.2, 0.3]}]}', "wrong dimension"),
    "too few vectors": (200, "application/json", b'{"data": []}', "returned 0 vectors for 1 inputs"),
}


@pytest.mark.parametrize("case", list(GARBAGE))
async def test_garbage_embedding_answers_become_clear_errors(case: str) -> None:
    status, ctype, body, expected = GARBAGE[case]
    server = Recorder(lambda path, sent: (status, ctype, body))
    try:
        e = OpenAIEmbedder("junk", base_url=f"{server.url}/v1", dimension=8, retry_delay=0.01,
                           policy=OPERATOR)
        with pytest.raises(EmbeddingReplyError, match=expected) as info:
            await e.embed_passages(["hello"])
        assert f"embedding provider openai:junk at {server.url}/v1" in str(info.value)
        assert len(server.hits) == 1  # not retried: the same request gets the same garbage
        await e.aclose()
    finally:
        server.close()


@pytest.mark.parametrize(("body", "expected"), [
    (b"not json", "not JSON"), (b'{"error": "x"}', "unexpected answer"),
    (b'{"embeddings": [[1, 2], [3]]}', "returned 2 vectors for 1"),
    (b'{"embeddings": [[]]}', "non-empty list")])
async def test_garbage_ollama_answers_become_clear_errors(body: bytes, expected: str) -> None:
    server = Recorder(lambda path, sent: (200, "application/json", body))
    try:
        e = OllamaEmbedder("junk", base_url=server.url, retry_delay=0.01, policy=OPERATOR)
        with pytest.raises(EmbeddingReplyError, match=expected) as info:
            await e.embed_passages(["hello"])
        assert "embedding provider ollama:junk" in str(info.value)
    finally:
        server.close()


async def test_a_garbage_embedding_answer_is_the_documents_error(
        make_settings: Callable[..., Settings]) -> None:
    server = Recorder(lambda path, sent: (200, "application/json", json.dumps("oops").encode()))
    try:
        settings = make_settings(embedder="openai:junk", embedder_base_url=f"{server.url}/v1",
                                 embedder_dimension=8)
        async with started(settings) as c, client_for(c) as http:
            kb = (await http.post("/api/v1/knowledge-bases", json={"name": "kb"})).json()["data"]
            doc = await _upload_and_settle(http, kb["id"])
        assert doc is not None
        assert doc["parse_status"] == "failed"
        assert "embedding provider openai:junk" in doc["error_message"]
        assert "unexpected answer" in doc["error_message"]
        assert "AttributeError" not in doc["error_message"]
        assert "Internal error" not in doc["error_message"]
    finally:
        server.close()
