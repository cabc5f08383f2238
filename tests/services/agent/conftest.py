from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from tests.fakes.model_server import FakeModelServer
from tests.services.agent.helpers import close_models


@pytest.fixture
def fake() -> Iterator[FakeModelServer]:
    with FakeModelServer() as server:
        yield server


@pytest.fixture(autouse=True)
async def _close_models() -> AsyncIterator[None]:
    yield
    await close_models()
