"""The table "Routes WeKnora's web UI calls" in docs/weknora-compat.md stays true (issue 13, "Also").

Each row names a method and a path WeKnora's web UI calls (``:name`` for a path parameter) and Knora's status:

- ``served`` and ``off``: the app has a route of that method whose path template is the row's (``:id`` and
  ``{kb_id}`` are both "a parameter"), and it is the route a request reaches, not an earlier route with a
  parameter in its place (``/knowledge/{knowledge_id}`` before ``/knowledge/batch``). A row whose literal path
  is only reached through such a parameter route (``/tenants/kv/retrieval-config`` through
  ``/tenants/kv/{key}``) is checked by a real request instead, which must not be a 404.
- ``off``: a real request is answered, not the router's 404, and ``/system/capabilities`` marks the capability
  the row's note names ("capability `organizations`") ``supported: false``, so the UI hides the feature.
- ``missing``: no route has that template, so a new route fails this test until its row is updated; a
  request that a parameter route catches (``GET /knowledge/search`` reaching ``/knowledge/{knowledge_id}``)
  fails (4xx).

No request may answer 5xx.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from fastapi import FastAPI
from starlette.routing import BaseRoute, Mount, compile_path

from knora.api.app import API_PREFIX, create_app
from knora.root import Services
from knora.settings import Settings
from knora.web.mount import UI_ROUTE_PATHS
from tests.conftest import client_for

pytestmark = pytest.mark.integration

DOC = Path(__file__).resolve().parents[2] / "docs" / "weknora-compat.md"
SECTION = "## Routes WeKnora's web UI calls"
STATUSES = frozenset({"served", "off", "missing"})
AREAS = frozenset({"login/startup", "knowledge", "chat", "agent", "settings"})
METHODS = frozenset({"GET", "POST", "PUT", "PATCH", "DELETE"})
CAPABILITY_RE = re.compile(r"capability `([\w.]+)`")
# A sample value for every path parameter: UUID-shaped, as WeKnora's ids are.
SAMPLE_ID = "00000000-0000-4000-8000-000000000000"


@dataclass(frozen=True)
class Row:
    area: str
    method: str
    path: str  # relative to /api/v1, parameters as ``:name``
    status: str
    note: str

    @property
    def label(self) -> str:
        return f"{self.method} {self.path}"

    @property
    def template(self) -> str:
        """The full path with every parameter as ``{}``."""
        return API_PREFIX + re.sub(r":\w+", "{}", self.path)

    @property
    def concrete(self) -> str:
        return API_PREFIX + re.sub(r":\w+", SAMPLE_ID, self.path)

    @property
    def has_params(self) -> bool:
        return ":" in self.path


def parse_table(text: str) -> list[Row]:
    """The rows of the section's Markdown table (area | method | path | status | note)."""
    _, found, rest = text.partition(f"\n{SECTION}\n")
    assert found, f"no section {SECTION!r} in {DOC}"
    section = rest.split("\n## ", 1)[0]
    rows: list[Row] = []
    for line in section.splitlines():
        if not line.startswith("|"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        assert len(cells) == 5, f"a row needs 5 cells: {line!r}"
        if cells[0] == "area" or set(cells[0]) <= {"-", ":"}:
            continue  # the header and its separator
        area, method, path, status, note = cells
        rows.append(Row(area, method, path.strip("`"), status, note))
    return rows


def _api_routes(routes: Iterable[BaseRoute], prefix: str = "") -> Iterator[tuple[str, frozenset[str]]]:
    """(full path template, methods) of every route, in the order a request tries them; included routers
    (FastAPI keeps them as one nested route since 0.13x) and mounts are opened."""
    for route in routes:
        included = getattr(route, "original_router", None)
        if included is not None:
            yield from _api_routes(included.routes, prefix + route.include_context.prefix)  # type: ignore[attr-defined]
        elif isinstance(route, Mount):
            yield from _api_routes(route.routes, prefix + route.path)
        else:
            path, methods = getattr(route, "path", None), getattr(route, "methods", None)
            if isinstance(path, str) and methods and prefix + path not in UI_ROUTE_PATHS:
                yield prefix + path, frozenset(methods)


def _template(path: str) -> str:
    return re.sub(r"\{[^}]+\}", "{}", path)


@dataclass(frozen=True)
class Routing:
    exact: bool  # a route of this method has the row's template
    reached: str | None  # the template of the first route a request for the row's path reaches


def routing(routes: list[tuple[str, frozenset[str]]], row: Row) -> Routing:
    exact = any(row.method in methods and _template(path) == row.template for path, methods in routes)
    reached = next((path for path, methods in routes
                    if row.method in methods and compile_path(path)[0].fullmatch(row.concrete)), None)
    return Routing(exact, reached)


ROWS = parse_table(DOC.read_text(encoding="utf-8"))


def _app_routes(app: FastAPI) -> list[tuple[str, frozenset[str]]]:
    routes = list(_api_routes(app.router.routes))
    assert any(path.startswith(API_PREFIX + "/") for path, _ in routes), "the route walk found no API route"
    return routes


def test_the_table_is_well_formed() -> None:
    assert len(ROWS) > 100
    assert {r.area for r in ROWS} == AREAS
    seen: set[str] = set()
    for row in ROWS:
        assert row.status in STATUSES, row
        assert row.method in METHODS, row
        assert row.path.startswith("/"), row
        assert not row.path.startswith(API_PREFIX), row
        assert row.label not in seen, f"two rows for {row.label}"
        seen.add(row.label)
        if row.status == "off":
            assert CAPABILITY_RE.search(row.note), f"an off row names its capability: {row}"


def test_a_route_behind_a_parameter_route_is_not_reached() -> None:
    """The shadowing the agreement test reports: a literal route declared after a parameter route that takes
    its path is never reached, though the app "has" it."""
    row = Row("knowledge", "GET", "/knowledge/batch", "served", "")
    batch, by_id = (f"{API_PREFIX}/knowledge/batch", frozenset({"GET"})), (f"{API_PREFIX}/knowledge/{{kid}}",
                                                                          frozenset({"GET"}))
    assert routing([batch, by_id], row) == Routing(exact=True, reached=batch[0])
    assert routing([by_id, batch], row) == Routing(exact=True, reached=by_id[0])


def test_every_row_agrees_with_the_apps_routes(make_settings: Callable[..., Settings]) -> None:
    routes = _app_routes(create_app(make_settings()))
    wrong: list[str] = []
    for row in ROWS:
        found = routing(routes, row)
        if row.status == "missing" and found.exact:
            wrong.append(f"{row.label}: marked missing, but the app routes it")
        elif row.status != "missing" and found.exact and _template(found.reached or "") != row.template:
            wrong.append(f"{row.label}: marked {row.status}, but a request reaches {found.reached} first")
        elif row.status != "missing" and not found.exact and found.reached is None:
            wrong.append(f"{row.label}: marked {row.status}, but no route takes it")
    assert not wrong, "docs/weknora-compat.md disagrees with the app:\n" + "\n".join(wrong)


def _is_router_404(status: int, body: object) -> bool:
    """The answer for a path no route takes (``knora.api.errors``), not a handler's "x not found"."""
    return status == 404 and isinstance(body, dict) and body.get("error", {}).get("message") == "Not Found"


async def test_requests_agree_with_the_table(sqlite_container: Services) -> None:
    routes = _app_routes(create_app(services=sqlite_container))
    wrong: list[str] = []
    async with client_for(sqlite_container) as http:
        caps = (await http.get(f"{API_PREFIX}/system/capabilities")).json()["data"]["capabilities"]
        for row in ROWS:
            found = routing(routes, row)
            if row.status != "off" and (found.exact or found.reached is None):
                continue  # settled by the route table alone
            body: dict[str, str] | None = {} if row.method in ("POST", "PUT", "PATCH") else None
            r = await http.request(row.method, row.concrete, json=body)
            payload = r.json() if r.headers.get("content-type", "").startswith("application/json") else None
            if r.status_code >= 500:
                wrong.append(f"{row.label}: answered {r.status_code}")
            elif row.status == "missing" and r.status_code < 400:
                wrong.append(f"{row.label}: marked missing, but {found.reached} answers {r.status_code}")
            elif row.status != "missing" and (
                    _is_router_404(r.status_code, payload) or (r.status_code == 404 and not row.has_params)):
                wrong.append(f"{row.label}: marked {row.status}, but it answers 404")
            if row.status == "off":
                for cap in CAPABILITY_RE.findall(row.note):
                    if caps.get(cap, {}).get("supported") is not False:
                        wrong.append(f"{row.label}: off, but /system/capabilities does not mark {cap} "
                                     "unsupported")
    assert not wrong, "docs/weknora-compat.md disagrees with the app:\n" + "\n".join(wrong)
