"""Helpers shared by the CLI commands: running services, the default tenant, output."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from knora.domain.knowledge import KnowledgeBase
from knora.root import Services, build_services
from knora.settings import Settings


@asynccontextmanager
async def running_services(settings: Settings | None = None) -> AsyncIterator[Services]:
    # The CLI never ingests the sample KB on its own: that is the server's first-start convenience.
    services = await build_services((settings or Settings()).model_copy(update={"sample_kb": False}))
    try:
        yield services
    finally:
        await services.aclose()


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, default=str) + "\n")


def fail(message: str, code: int = 1) -> int:
    sys.stderr.write(f"knora: {message}\n")
    return code


async def find_kb(c: Services, name_or_id: str) -> KnowledgeBase | None:
    kb = await c.repos.kbs.get(c.default_tenant_id, name_or_id)
    if kb is None:
        kb = await c.repos.kbs.get_by_name(c.default_tenant_id, name_or_id)
    return kb
