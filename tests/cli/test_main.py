"""The CLI entry point runs its commands on uvloop when installed (``knora serve`` serves on the loop it is
given)."""

from __future__ import annotations

import asyncio

import pytest

from knora.cli.main import run

pytestmark = pytest.mark.unit


def test_commands_run_on_uvloop_when_installed() -> None:
    uvloop = pytest.importorskip("uvloop")

    async def which() -> type:
        return type(asyncio.get_running_loop())

    assert run(which()) is uvloop.Loop


def test_a_command_result_and_errors_come_back() -> None:
    async def ok() -> int:
        await asyncio.sleep(0)
        return 7

    async def bad() -> None:
        raise ValueError("no")

    assert run(ok()) == 7
    with pytest.raises(ValueError, match="no"):
        run(bad())
