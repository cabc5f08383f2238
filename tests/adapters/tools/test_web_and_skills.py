"""web_fetch's network guard against real local HTTP servers; skills run as real subprocesses with limits."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from knora import netguard
from knora.adapters.tools import _netguard, execute_skill_script, read_skill, web_fetch, web_search
from knora.ports.tool import ToolContext, ToolDeps
from knora.ports.websearch import WebResult
from knora.settings import Settings
from tests.fakes.web_site import Page, redirect, serve

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    page = Page(b"<html><head><title>Knora page</title><script>x()</script></head>"
                b"<body><p>Hello body</p></body></html>", "text/html")
    pages = {"/hop": redirect("/page"), "/to-metadata": redirect("http://169.254.169.254/latest/meta-data"),
             "/page": page}
    with serve(pages, default=Page(page.body, "text/html", 404)) as base:
        yield base


def fetch_tool(**settings: Any) -> Any:
    return web_fetch.WebFetchTool(ToolDeps(settings=Settings(sample_kb=False, **settings)))


class TestWebFetch:
    async def test_loopback_is_refused_by_default(self, site: str) -> None:
        res = await fetch_tool().execute({"items": [{"url": f"{site}/page"}]}, ToolContext(tenant_id=1))
        assert not res.success
        page = res.data["pages"][0]
        assert page["error_code"] == "blocked_address"
        assert page["retryable"] is False

    @pytest.mark.parametrize("url", ["http://169.254.169.254/", "http://10.1.2.3/", "http://[::1]/",
                                     "http://0.0.0.0/", "file:///etc/passwd"])
    async def test_private_and_odd_urls_refused(self, url: str) -> None:
        with pytest.raises(_netguard.FetchRefused):
            await _netguard.check_url(url, allow_private=False)

    async def test_allowed_when_settings_say_so_and_redirects_followed(self, site: str) -> None:
        res = await fetch_tool(allow_private_network_fetch=True).execute(
            {"items": [{"url": f"{site}/hop"}, {"url": f"{site}/missing"}]}, ToolContext(tenant_id=1))
        ok, missing = res.data["pages"]
        assert ok["status"] == "success"
        assert ok["title"] == "Knora page"
        assert ok["final_url"].endswith("/page")
        assert "Hello body" in ok["content"]
        assert "x()" not in ok["content"]
        assert missing["error_code"] == "http_404"
        assert res.success

    async def test_every_redirect_hop_is_checked(self, site: str, monkeypatch: pytest.MonkeyPatch) -> None:
        # treat loopback as public for this test, so only the redirect target (link-local) is blocked
        monkeypatch.setattr(netguard, "is_public", lambda ip: not ipaddress.ip_address(ip).is_link_local)
        res = await fetch_tool().execute({"items": [{"url": f"{site}/to-metadata"}]},
                                         ToolContext(tenant_id=1))
        page = res.data["pages"][0]
        assert page["status"] == "failed"
        assert "169.254.169.254" in page["error"]


class FakeWeb:
    name = "fake"

    async def search(self, query: str, max_results: int = 5) -> list[WebResult]:
        return [WebResult(title=f"T{i}", url=f"https://example.org/{i}", snippet=query, content="c" * 900)
                for i in range(max_results)]


async def test_web_search_uses_the_agent_limit() -> None:
    res = await web_search.WebSearchTool(ToolDeps(web_search=FakeWeb())).execute(
        {"query": "knora"}, ToolContext(tenant_id=1, web_search_max_results=2))
    assert [r["url"] for r in res.data["results"]] == ["https://example.org/0", "https://example.org/1"]
    assert res.data["display_type"] == "web_search_results"
    assert "c" * 501 not in res.output


@pytest.fixture
def skills(tmp_path: Path) -> Path:
    root = tmp_path / "skills"
    d = root / "greeter"
    d.mkdir(parents=True)
    (d / "SKILL.md").write_text("---\nname: greeter\ndescription: Greets people\n---\n"
                                "Run hello.py with a name.\n")
    (d / "hello.py").write_text("import sys\nprint('hello', *sys.argv[1:], sys.stdin.read())\n")
    (d / "spin.py").write_text("while True:\n    pass\n")
    (d / "hog.py").write_text("x = bytearray(1024 * 1024 * 1024)\nprint(len(x))\n")
    (d / "fail.sh").write_text("echo oops >&2\nexit 3\n")
    (root / "claude-helper").mkdir()
    (root / "claude-helper" / "SKILL.md").write_text("---\nname: claude-helper\ndescription: reserved\n---\n")
    return root


def skill_deps(root: Path, **kw: Any) -> ToolDeps:
    return ToolDeps(settings=Settings(sample_kb=False, skills_enabled=True, skills_dir=root, **kw))


class TestSkills:
    def test_off_unless_enabled(self, skills: Path) -> None:
        deps = ToolDeps(settings=Settings(sample_kb=False, skills_dir=skills))
        assert read_skill.make(deps) is None
        assert execute_skill_script.make(deps) is None

    async def test_read_skill_and_refuse_escapes(self, skills: Path) -> None:
        tool = read_skill.ReadSkillTool(skill_deps(skills))
        res = await tool.execute({"skill_name": "greeter"}, ToolContext(tenant_id=1))
        assert "Run hello.py" in res.output
        assert "hello.py" in res.data["files"]
        bad = await tool.execute({"skill_name": "greeter", "file_path": "../../etc/passwd"},
                                 ToolContext(tenant_id=1))
        assert not bad.success
        reserved = await tool.execute({"skill_name": "claude-helper"}, ToolContext(tenant_id=1))
        assert not reserved.success

    async def test_script_runs_with_args_and_stdin(self, skills: Path) -> None:
        tool = execute_skill_script.ExecuteSkillScriptTool(skill_deps(skills))
        res = await tool.execute({"skill_name": "greeter", "script_path": "hello.py", "args": ["Ada"],
                                  "input": "!"}, ToolContext(tenant_id=1))
        assert res.data["exit_code"] == 0
        assert res.data["stdout"].strip() == "hello Ada !"
        fail = await tool.execute({"skill_name": "greeter", "script_path": "fail.sh"},
                                  ToolContext(tenant_id=1))
        assert fail.data["exit_code"] == 3
        assert "oops" in fail.data["stderr"]

    async def test_time_limit(self, skills: Path) -> None:
        tool = execute_skill_script.ExecuteSkillScriptTool(skill_deps(skills, sandbox_timeout_seconds=1.0))
        res = await tool.execute({"skill_name": "greeter", "script_path": "spin.py"},
                                 ToolContext(tenant_id=1))
        assert not res.success or res.data["exit_code"] != 0

    async def test_memory_limit(self, skills: Path) -> None:
        tool = execute_skill_script.ExecuteSkillScriptTool(skill_deps(skills, sandbox_memory_mb=256))
        res = await tool.execute({"skill_name": "greeter", "script_path": "hog.py"}, ToolContext(tenant_id=1))
        assert res.data["exit_code"] != 0
        assert "MemoryError" in res.data["stderr"]
