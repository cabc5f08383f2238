"""Helpers shared by the CLI commands: a started container, the default tenant, output."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from knora.container import Container
from knora.settings import Settings


@asynccontextmanager
async def running_container(settings: Settings | None = None) -> AsyncIterator[Container]:
    # The CLI never ingests the sample KB on its own: that is the server's first-start convenience.
    c = Container((settings or Settings()).model_copy(update={"sample_kb": False}))
    await c.start()
    try:
        yield c
    finally:
        await c.close()


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, default=str) + "\n")


def fail(message: str, code: int = 1) -> int:
    sys.stderr.write(f"knora: {message}\n")
    return code


async def find_kb(c: Container, name_or_id: str) -> Any:
    kb = await c.repos.kbs.get(c.default_tenant_id, name_or_id)
    if kb is None:
        kb = await c.repos.kbs.get_by_name(c.default_tenant_id, name_or_id)
    return kb
