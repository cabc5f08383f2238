"""``web_fetch``: fetch pages (SSRF-guarded, redirects re-checked), extract text, summarise against a
prompt."""

from __future__ import annotations

import asyncio
import logging
from typing import Any, ClassVar

import httpx
from bs4 import BeautifulSoup

from knora.adapters.tools._base import BaseTool
from knora.adapters.tools._netguard import FetchRefused, guarded_client, safe_get
from knora.ports.chat import ChatMessage, ChatOptions
from knora.ports.tool import ToolContext, ToolDeps, ToolResult

log = logging.getLogger(__name__)
CONTENT_BYTES = 8000


def page_text(body: bytes, content_type: str) -> tuple[str, str]:
    text = body.decode("utf-8", "replace")
    if "html" not in content_type and not text.lstrip().startswith("<"):
        return "", text
    soup = BeautifulSoup(text, "html.parser")
    for tag in soup(["script", "style", "noscript", "nav", "footer", "header"]):
        tag.decompose()
    title = soup.title.get_text(strip=True) if soup.title else ""
    lines = [ln.strip() for ln in soup.get_text("\n").splitlines() if ln.strip()]
    return title, "\n".join(lines)


class WebFetchTool(BaseTool):
    name = "web_fetch"
    description = ("Fetch web pages (by URL or web handle wN) and read them with a question in mind. "
                   "Use after web_search when a snippet is not enough.")
    parameters: ClassVar[dict[str, Any]] = {"type": "object", "properties": {"items": {"type": "array",
                                                                                       "minItems": 1,
                                                                                       "maxItems": 5,
        "items": {"type": "object", "properties": {"url": {"type": "string"}, "prompt": {"type": "string"}},
                  "required": ["url"]}}}, "required": ["items"]}
    timeout_seconds = 90.0

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        allow = bool(getattr(self.deps.settings, "allow_private_network_fetch", False))
        timeout = float(getattr(self.deps.settings, "url_fetch_timeout_seconds", 20.0))
        seen: dict[str, dict[str, Any]] = {}
        for item in args["items"]:
            url = str(item["url"]).strip()
            if "//github.com/" in url and "/blob/" in url:  # the raw file, not GitHub's HTML around it
                url = url.replace("//github.com/", "//raw.githubusercontent.com/", 1).replace("/blob/", "/",
                                                                                              1)
            seen.setdefault(url, {"url": url, "prompt": item.get("prompt", "")})
        async with guarded_client(allow_private=allow, timeout=timeout,
                                  headers={"User-Agent": "Knora/0.1 (+agent web_fetch)"}) as http:
            pages = await asyncio.gather(*(self._one(http, p, allow, ctx) for p in seen.values()))
        ok = [p for p in pages if p["status"] == "success"]
        lines = [f"{p['url']}: {p['status']}" + (f" — {p['error']}" if p.get("error") else "") for p in pages]
        return ToolResult(success=bool(ok), output="\n".join(lines),
                          error="" if ok else "all pages failed to fetch",
                          data={"display_type": "web_fetch_results", "pages": pages})

    async def _one(self, http: httpx.AsyncClient, item: dict[str, Any], allow: bool,
                   ctx: ToolContext) -> dict[str, Any]:
        page: dict[str, Any] = {"url": item["url"], "title": "", "status": "failed"}
        try:
            final, resp, body = await safe_get(http, item["url"], allow_private=allow)
        except FetchRefused as exc:
            return {**page, "error": str(exc), "error_code": exc.code, "retryable": exc.retryable}
        except httpx.HTTPError as exc:
            return {**page, "error": str(exc) or type(exc).__name__, "error_code": "network",
                    "retryable": True}
        if resp.status_code >= 400:
            return {**page, "error": f"HTTP {resp.status_code}", "error_code": f"http_{resp.status_code}",
                    "retryable": resp.status_code >= 500}
        title, text = page_text(body, resp.headers.get("content-type", ""))
        content = text.encode()[:CONTENT_BYTES].decode("utf-8", "ignore")
        page.update({"status": "success", "title": title, "final_url": final, "content": content})
        if item.get("prompt") and self.deps.chat_models is not None:
            try:
                model = await self.deps.chat_models.get(ctx.chat_model_id, tenant_id=ctx.tenant_id)
                resp_m = await model.chat([
                    ChatMessage(role="system", content=(
                        "Summarise the web page below for the request. Keep facts, numbers and names; "
                        "say when the page does not answer it.")),
                    ChatMessage(role="user", content=(
                        f"Request: {item['prompt']}\n\nPage ({title}):\n{content}"))],
                    ChatOptions(temperature=0.3, max_tokens=1024))
                page["summary"] = resp_m.content.strip()
            except Exception as exc:  # noqa: BLE001 - the raw content still serves
                log.info("web_fetch summary failed: %s", exc)
                page["summary_error"] = "summary_failed"
        return page


def make(deps: ToolDeps) -> WebFetchTool:
    return WebFetchTool(deps)
