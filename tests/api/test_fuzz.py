"""A bounded schema-driven fuzz run over ``/openapi.json`` (issue 20, item 3): 0 5xx, the envelope on every
error. The larger run is ``benchmarks/fuzz.py``; the generator is ``tests/api/fuzzing.py``."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import httpx
import pytest

from knora.api.app import create_app
from knora.root import Services
from tests.api import fuzzing
from tests.conftest import TEST_API_KEY

pytestmark = pytest.mark.integration

EXAMPLES = 1000


@pytest.fixture
async def app_http(lite_container: Services) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(services=lite_container)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app, raise_app_exceptions=False), base_url="http://knora.test",
                                 headers={"X-API-Key": TEST_API_KEY}, timeout=60) as http:
        yield http


async def test_every_field_of_every_body_with_every_wrong_kind(app_http: httpx.AsyncClient) -> None:
    ops = fuzzing.operations((await app_http.get("/openapi.json")).json())
    ids = await fuzzing.seed_ids(app_http)
    cases = fuzzing.sweep(ops, ids)
    assert len(cases) > 500
    tally = fuzzing.Tally()
    await asyncio.to_thread(fuzzing.run_sweep, asyncio.get_running_loop(), app_http, cases, tally)
    assert (tally.server_errors, tally.non_envelope) == (0, 0), "\n".join(tally.examples)


async def test_no_5xx_and_the_envelope_on_every_error(app_http: httpx.AsyncClient) -> None:
    openapi = (await app_http.get("/openapi.json")).json()
    ops = fuzzing.operations(openapi)
    assert len(ops) > 50
    ids = await fuzzing.seed_ids(app_http)
    assert {"kb_id", "session_id", "knowledge_id"} <= set(ids)
    tally = fuzzing.Tally()
    await asyncio.to_thread(fuzzing.run, asyncio.get_running_loop(), app_http,
                            fuzzing.case_strategy(ops, ids), EXAMPLES, tally)
    assert tally.cases == EXAMPLES
    assert len(tally.by_route) > 40  # the cases reach most routes
    assert (tally.server_errors, tally.non_envelope) == (0, 0), "\n".join(tally.examples)
