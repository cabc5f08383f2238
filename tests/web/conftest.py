"""Browser-test fixtures: a real Knora server (a uvicorn subprocess with its own data dir), the fake model
server, and Debian's chromium driven by Playwright. Each test may save a screenshot to docs/screenshots/."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fakes.model_server import FakeModelServer

ROOT = Path(__file__).resolve().parents[2]
# The documentation's screenshots are rewritten only when asked (KNORA_UPDATE_SCREENSHOTS=1); a plain test run
# writes them to a scratch folder, so running the tests never leaves the work tree changed.
SHOTS = (ROOT / "docs" / "screenshots" if os.environ.get("KNORA_UPDATE_SCREENSHOTS") == "1"
         else Path(tempfile.gettempdir()) / "knora-screenshots")
API_KEY = "sk-web-test"
OWNER_EMAIL = "owner@localhost"  # the owner account every test server makes on its first start
OWNER_PASSWORD = "owner-web-test-pw"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-quic",
                 "--no-first-run", "--disable-component-update", "--disable-sync"]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if Path(str(item.fspath)).parent == Path(__file__).parent:
            item.add_marker(pytest.mark.browser)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_http(url: str, proc: subprocess.Popen[bytes] | None = None, tries: int = 300) -> None:
    for _ in range(tries):
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        try:
            if httpx.get(url, timeout=1).status_code < 500:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"{url} did not come up")


class KnoraServer:
    def __init__(self, base_url: str, proc: subprocess.Popen[bytes], log: Path) -> None:
        self.base_url = base_url
        self.proc = proc
        self.log = log
        self.http = httpx.Client(base_url=f"{base_url}/api/v1", headers={"X-API-Key": API_KEY}, timeout=30)

    def api(self, method: str, path: str, **kw: Any) -> Any:
        r = self.http.request(method, path, **kw)
        assert r.status_code < 400, f"{method} {path} -> {r.status_code} {r.text[:300]}"
        return r.json().get("data")


@pytest.fixture(scope="module")
def fake_model() -> Iterator[FakeModelServer]:
    with FakeModelServer() as fake:
        yield fake


def launch_server(data_dir: Path, fake: FakeModelServer, **env_overrides: str) -> KnoraServer:
    port = free_port()
    env = {**os.environ, "KNORA_DATA_DIR": str(data_dir), "KNORA_EMBEDDER": "local:hash",
           "KNORA_SAMPLE_KB": "false", "KNORA_API_KEY": API_KEY, "KNORA_LOG_LEVEL": "WARNING",
           "KNORA_OWNER_PASSWORD": OWNER_PASSWORD,
           "KNORA_CHAT_MODEL": "openai:fake-chat", "KNORA_CHAT_BASE_URL": fake.base_url,
           "KNORA_CHAT_API_KEY": "sk-fake",
           # model rows made through the UI point at loopback fakes: the test operator allow-lists loopback
           "KNORA_OUTBOUND_ALLOWED_HOSTS": '["127.0.0.1", "::1"]'}
    env.update(env_overrides)
    env = {k: v for k, v in env.items() if v != ""}
    data_dir.mkdir(parents=True, exist_ok=True)
    log = data_dir / "server.log"
    proc = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "--factory", "knora.api.app:create_app", "--host", "127.0.0.1",
         "--port", str(port), "--log-level", "warning"],
        cwd=ROOT, env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_http(f"{base}/health", proc, tries=1200)
    except RuntimeError:
        proc.kill()
        raise RuntimeError(log.read_text()[-3000:]) from None
    return KnoraServer(base, proc, log)


def stop_server(server: KnoraServer) -> None:
    server.http.close()
    server.proc.terminate()
    try:
        server.proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        server.proc.kill()


@pytest.fixture(scope="module")
def shared_server(tmp_path_factory: pytest.TempPathFactory,
                  fake_model: FakeModelServer) -> Iterator[KnoraServer]:
    """One server per test module (starting one costs seconds); ``server`` empties it before each test."""
    srv = launch_server(tmp_path_factory.mktemp("knora") / "data", fake_model)
    yield srv
    stop_server(srv)


def _reset(server: KnoraServer, fake: FakeModelServer) -> None:
    fake.handler = None
    for path, listing in (("/sessions", "/sessions?page=1&page_size=1000"), ("/knowledge-bases",
                                                                             "/knowledge-bases")):
        r = server.http.get(listing)
        assert r.status_code == 200, f"GET {listing} -> {r.status_code} {r.text[:300]}"
        for row in r.json().get("data") or []:
            server.http.delete(f"{path}/{row['id']}")


@pytest.fixture
def server(shared_server: KnoraServer, fake_model: FakeModelServer) -> KnoraServer:
    _reset(shared_server, fake_model)
    return shared_server


@pytest.fixture(scope="session")
def static_server() -> Iterator[str]:
    """Just the UI's static files (knora.web.mount on a bare FastAPI app), for the JS unit tests."""
    import uvicorn
    from fastapi import FastAPI

    from knora.web.mount import mount

    app = FastAPI()
    mount(app)
    port = free_port()
    srv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning",
                                        lifespan="off"))
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    wait_http(f"http://127.0.0.1:{port}/index.html")
    yield f"http://127.0.0.1:{port}"
    srv.should_exit = True
    thread.join(timeout=10)


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    exe = shutil.which("chromium")
    if not exe:
        pytest.fail("Debian's chromium is not installed (make browser)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
        yield b
        b.close()


class PageErrors(list[str]):
    pass


@pytest.fixture
def new_page(browser: Any) -> Iterator[Callable[..., Any]]:
    contexts: list[Any] = []

    def _new(width: int = 1280, height: int = 820, **kw: Any) -> Any:
        ctx = browser.new_context(viewport={"width": width, "height": height}, **kw)
        ctx.set_default_timeout(20_000)
        contexts.append(ctx)
        page = ctx.new_page()
        errors = PageErrors()
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.js_errors = errors
        return page

    yield _new
    for ctx in contexts:
        for p in ctx.pages:
            errs = getattr(p, "js_errors", [])
            assert not errs, f"JavaScript errors on the page: {errs}"
        ctx.close()


def shot(page: Any, name: str) -> Path:
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=False)
    return path
