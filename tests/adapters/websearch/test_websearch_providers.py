"""Web search providers and the page fetcher over httpx's injectable transport (request shapes checked)."""

from __future__ import annotations

import json

import httpx
import pytest

from knora.adapters.websearch.bing import BingSearch
from knora.adapters.websearch.duckduckgo import DuckDuckGoSearch
from knora.adapters.websearch.fetch import FetchRefused, PageFetcher, html_to_text
from knora.adapters.websearch.registry import build_web_search
from knora.adapters.websearch.searxng import SearxngSearch
from knora.adapters.websearch.tavily import TavilySearch
from knora.ports.chat import ModelError

pytestmark = pytest.mark.unit


def transport(handler: object) -> httpx.MockTransport:
    return httpx.MockTransport(handler)  # type: ignore[arg-type]


class TestProviders:
    async def test_searxng(self) -> None:
        def handle(req: httpx.Request) -> httpx.Response:
            assert req.url.path == "/search"
            assert req.url.params["format"] == "json"
            return httpx.Response(200, json={"results": [
                {"title": "A", "url": "https://a.example", "content": "snip", "engine": "ddg",
                 "publishedDate": "2026-01-02"}, {"title": "no url"}]})

        s = SearxngSearch("http://sx.local", transport=transport(handle))
        out = await s.search("q", 5)
        await s.close()
        assert [(r.title, r.url, r.snippet, r.published_at) for r in out] == [
            ("A", "https://a.example", "snip", "2026-01-02")]

    async def test_tavily_and_errors(self) -> None:
        seen: list[dict[str, object]] = []

        def handle(req: httpx.Request) -> httpx.Response:
            seen.append({"auth": req.headers["authorization"], **json.loads(req.content)})
            if len(seen) > 1:
                return httpx.Response(429)
            return httpx.Response(200, json={"results": [{"title": "T", "url": "https://t", "content": "c",
                                                          "raw_content": "full"}]})

        t = TavilySearch("key", transport=transport(handle))
        out = await t.search("solar", 3)
        with pytest.raises(ModelError) as err:
            await t.search("again")
        await t.close()
        assert out[0].content == "full"
        assert seen[0]["auth"] == "Bearer key"
        assert seen[0]["max_results"] == 3
        assert err.value.transient

    async def test_bing(self) -> None:
        def handle(req: httpx.Request) -> httpx.Response:
            assert req.headers["ocp-apim-subscription-key"] == "k"
            assert req.url.params["count"] == "2"
            return httpx.Response(200, json={"webPages": {"value": [{"name": "N", "url": "https://n",
                                                                     "snippet": "s"}]}})

        b = BingSearch("k", transport=transport(handle))
        out = await b.search("q", 2)
        await b.close()
        assert out[0].title == "N"

    async def test_duckduckgo_html(self) -> None:
        html = """<div class="result"><a class="result__a"
        href="//duckduckgo.com/l/?uddg=https%3A%2F%2Freal.example%2Fp&rut=x">Real</a>
        <a class="result__snippet">The snippet</a></div>
        <div class="result"><a class="result__a" href="https://duckduckgo.com/y.js?ad=1">Ad</a></div>"""
        d = DuckDuckGoSearch(transport=transport(lambda req: httpx.Response(200, text=html)))
        out = await d.search("q")
        await d.close()
        assert [(r.title, r.url, r.snippet) for r in out] == [("Real", "https://real.example/p",
                                                               "The snippet")]

    def test_registry(self) -> None:
        assert build_web_search(None) is None
        assert build_web_search("duckduckgo").name == "duckduckgo"  # type: ignore[union-attr]
        with pytest.raises(ValueError):  # noqa: PT011 - the type is the contract, not the message
            build_web_search("tavily")
        with pytest.raises(ValueError):  # noqa: PT011 - the type is the contract, not the message
            build_web_search("altavista")


class TestPageFetcher:
    async def test_redirects_body_cap_and_text(self) -> None:
        page = "<html><body><nav>menu</nav><h1>Title</h1><script>x()</script><p>" + "word " * 50000 + \
               "</p><footer>f</footer></body></html>"

        def handle(req: httpx.Request) -> httpx.Response:
            if req.url.path == "/start":
                return httpx.Response(302, headers={"location": "/page"})
            return httpx.Response(200, text=page, headers={"content-type": "text/html"})

        async def resolver(host: str, port: int) -> list[str]:
            return ["10.0.0.7"]  # private, allowed here; the guard resolves even then, to refuse link-local

        f = PageFetcher(allow_private=True, transport=transport(handle), resolver=resolver)
        text = await f("http://site.example/start")
        await f.close()
        assert text.startswith("Title\nword")
        assert "menu" not in text
        assert "x()" not in text
        assert len(text) <= 100 * 1024

    async def test_private_addresses_are_refused(self) -> None:
        f = PageFetcher(transport=transport(lambda req: httpx.Response(200, text="secret")))
        with pytest.raises(FetchRefused):
            await f("http://127.0.0.1:9/admin")
        with pytest.raises(FetchRefused):
            await f("file:///etc/passwd")
        await f.close()

    def test_js_shell_is_empty(self) -> None:
        assert html_to_text('<html><body><div id="app"></div><script>boot()</script></body></html>') == ""
