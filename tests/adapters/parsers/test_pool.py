"""``ProcessParsers``: real worker processes, capped, timed, killed and replaced (issue 20, 4e).

The misbehaving parses are functions in ``hostile.py`` that the worker imports by name; the limits are set
tiny so that no test waits long, and nothing asserts on elapsed time.
"""

from __future__ import annotations

import asyncio
import resource
from collections.abc import AsyncIterator, Callable

import psutil
import pytest

from knora.adapters.parsers.pool import ProcessParsers
from knora.ports.parser import DocumentParsers, ParseError, ParseLimits, ParseOptions
from tests.adapters.parsers.test_parsers import make_docx
from tests.polling import eventually

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

Make = Callable[..., ProcessParsers]


@pytest.fixture
async def make_pool() -> AsyncIterator[Make]:
    pools: list[ProcessParsers] = []

    def make(entry: str = "tests.adapters.parsers.hostile:echo", *, memory_mb: int = 512,
             timeout: float = 30.0, workers: int = 1) -> ProcessParsers:
        pool = ProcessParsers(ParseLimits(64 << 20, memory_mb, timeout), workers=workers, entry=entry)
        pools.append(pool)
        return pool

    yield make
    for pool in pools:
        await pool.aclose()


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


async def test_a_document_is_parsed_in_a_warm_worker_that_is_reused(make_pool: Make) -> None:
    pool = make_pool("knora.adapters.parsers.worker:parse_document")
    assert isinstance(pool, DocumentParsers)
    first = await pool.parse(make_docx(), "guide.docx")
    assert first.title == "Installation Guide"
    assert "| chunk_size | 512 |" in first.text
    [pid] = pool.worker_pids()
    await pool.parse(make_docx(core_title="Again"), "again.docx")
    assert pool.worker_pids() == [pid]
    with pytest.raises(ParseError, match="unsupported file type .exe"):  # an ordinary failure: worker kept
        await pool.parse(b"MZ", "setup.exe")
    assert pool.worker_pids() == [pid]


async def test_the_worker_runs_under_the_memory_cap(make_pool: Make) -> None:
    pool = make_pool(memory_mb=300)
    doc = await pool.parse(b"hello", "a.txt")
    [pid] = pool.worker_pids()
    assert doc.text == f"hello (pid {pid})"
    assert psutil.Process(pid).rlimit(resource.RLIMIT_AS) == (300 << 20, 300 << 20)


async def test_a_parse_that_needs_more_memory_than_the_cap_fails_and_its_worker_is_replaced(
        make_pool: Make) -> None:
    pool = make_pool("tests.adapters.parsers.hostile:hoard", memory_mb=256)
    with pytest.raises(ParseError, match=r"^stopped: parsing needed more than 256 MB of memory"):
        await pool.parse(b"x", "big.txt")
    assert pool.worker_pids() == []  # a worker that ran out of memory is not reused


async def test_a_parse_past_the_time_limit_is_killed(make_pool: Make) -> None:
    pool = make_pool("tests.adapters.parsers.hostile:spin", timeout=0.3)
    task = asyncio.create_task(pool.parse(b"x", "slow.txt"))
    [pid] = await eventually(pool.worker_pids)
    with pytest.raises(ParseError, match=r"^stopped: parsing took longer than 0.3 s \(parse_timeout_"):
        await task
    assert gone(pid)
    assert pool.worker_pids() == []


async def test_a_worker_that_dies_fails_the_parse_and_the_next_one_gets_a_new_worker(make_pool: Make) -> None:
    pool = make_pool("tests.adapters.parsers.hostile:crash")
    with pytest.raises(ParseError, match=r"^stopped: the parser process was killed by signal 11"):
        await pool.parse(b"x", "a.txt")
    with pytest.raises(ParseError, match="signal 11"):
        await pool.parse(b"x", "b.txt")


async def test_cancelling_a_parse_kills_its_worker(make_pool: Make) -> None:
    pool = make_pool("tests.adapters.parsers.hostile:spin")
    task = asyncio.create_task(pool.parse(b"x", "slow.txt"))
    [pid] = await eventually(pool.worker_pids)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert gone(pid)
    assert pool.worker_pids() == []


async def test_closing_the_pool_ends_idle_and_busy_workers(make_pool: Make) -> None:
    pool = make_pool("tests.adapters.parsers.hostile:spin", workers=2)
    idle_pool = make_pool()
    await idle_pool.parse(b"x", "a.txt")
    [idle] = idle_pool.worker_pids()
    task = asyncio.create_task(pool.parse(b"x", "slow.txt"))
    [busy] = await eventually(pool.worker_pids)
    await pool.aclose()
    await idle_pool.aclose()
    with pytest.raises(ParseError, match="signal 9"):
        await task
    assert gone(idle)
    assert gone(busy)


def test_workers_are_reused_on_uvloop_too() -> None:
    """``knora serve`` runs on uvloop, whose ``add_reader`` leaves the socket non-blocking: the next document
    sent from a thread then failed with EAGAIN and the worker was killed."""
    uvloop = pytest.importorskip("uvloop")

    async def two_documents() -> list[str]:
        pool = ProcessParsers(ParseLimits(64 << 20, 512, 30.0), workers=1,
                              entry="tests.adapters.parsers.hostile:echo")
        try:
            return [(await pool.parse(b"x" * 300_000, f"{i}.txt")).text[-20:] for i in range(2)]
        finally:
            await pool.aclose()

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        first, second = runner.run(two_documents())
    assert first == second  # the same worker's pid


def test_the_runner_registry_names_process_and_thread() -> None:
    from knora.adapters.parsers.inthread import ThreadParsers
    from knora.adapters.parsers.runners import RUNNERS, build_document_parsers

    assert RUNNERS.names() == ("process", "thread")
    limits = ParseLimits(1 << 20)
    assert isinstance(build_document_parsers("process", limits, workers=1), ProcessParsers)
    assert isinstance(build_document_parsers("thread", limits, workers=1), ThreadParsers)


async def test_the_upload_options_reach_the_worker(make_pool: Make) -> None:
    # (ingestion sets the OCR budget from settings.parse_time_budget_fraction; the pool passes it on)
    pool = make_pool("tests.adapters.parsers.hostile:options", timeout=100.0)
    seen = ParseOptions.model_validate_json((await pool.parse(b"x", "a.pdf")).text)
    assert seen == ParseOptions()
    own = ParseOptions(time_budget_seconds=5.0, ocr=False)
    seen = ParseOptions.model_validate_json((await pool.parse(b"x", "a.pdf", own)).text)
    assert seen == own


async def test_workers_run_at_the_background_priority() -> None:
    """Parsing (OCR'd scans, huge files) is background work: its processes run ``nice`` lower than the
    server, so chat keeps the CPU."""
    import os

    pool = ProcessParsers(ParseLimits(64 << 20, 512, 30.0, nice=5), workers=1,
                          entry="tests.adapters.parsers.hostile:echo")
    try:
        await pool.parse(b"hello", "a.txt")
        (pid,) = pool.worker_pids()
        assert os.getpriority(os.PRIO_PROCESS, pid) == min(19, os.getpriority(os.PRIO_PROCESS, 0) + 5)
    finally:
        await pool.aclose()
