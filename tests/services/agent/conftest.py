from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.services.agent.helpers import close_models


@pytest.fixture(autouse=True)
async def _close_models() -> AsyncIterator[None]:
    yield
    await close_models()
