"""Large texts are split in a worker process: the drafts that come back are exactly the in-process
chunker's, small texts never leave the process, and a dead worker costs one text its speed, not its split."""

from __future__ import annotations

import random

import pytest

from knora.domain.knowledge import ChunkingConfig
from knora.services.ingest.chunker import split_document
from knora.services.ingest.split_pool import ProcessSplitter, drafts_from, split_columns

pytestmark = pytest.mark.integration


def _text(n: int) -> str:
    rng = random.Random(3)
    words = ["alpha", "beta", "gamma", "北京", "大学", "`code`", "[a](b)", "| x | y |"]
    paras = [" ".join(rng.choice(words) for _ in range(rng.randint(5, 80))) for _ in range(n)]
    return "# Title\n\n" + "\n\n".join(f"## Part {i}\n\n{p}" if i % 25 == 0 else p
                                       for i, p in enumerate(paras))


@pytest.mark.parametrize("config", [ChunkingConfig(chunk_size=200, chunk_overlap=40),
                                    ChunkingConfig(enable_parent_child=True)])
def test_drafts_from_the_worker_equal_the_chunkers(config: ChunkingConfig) -> None:
    text = _text(600)
    cuts = [len(text) // 3, 2 * len(text) // 3]
    expected = split_document(text, config, cuts)
    assert drafts_from(text, split_columns(text, config, cuts)) == expected  # the columnar round trip
    splitter = ProcessSplitter(nice=0, min_chars=1000)  # every text here goes to the worker
    try:
        assert splitter(text, config, cuts) == expected
        assert splitter._pool is not None  # it did
    finally:
        splitter._reset()


def test_small_texts_are_split_here_and_a_dead_worker_is_replaced() -> None:
    splitter = ProcessSplitter(nice=0, min_chars=10_000)
    config = ChunkingConfig(chunk_size=100, chunk_overlap=0)
    try:
        small = _text(5)
        assert splitter(small, config) == split_document(small, config)
        assert splitter._pool is None  # no process for a small text
        big = _text(400)
        assert splitter(big, config) == split_document(big, config)
        pool = splitter._pool
        assert pool is not None
        for proc in list(pool._processes.values()):  # the worker dies (killed, out of memory)
            proc.kill()
            proc.join(10)
        assert splitter(big, config) == split_document(big, config)  # split here this once
        assert splitter(big, config) == split_document(big, config)  # and in a new worker after
        assert splitter._pool is not None
        assert splitter._pool is not pool
    finally:
        splitter._reset()


def test_text_reaches_the_worker_through_a_file_that_is_removed_after(
        tmp_path: object, monkeypatch: pytest.MonkeyPatch) -> None:
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    # astral characters, CJK and a lone surrogate (a broken UTF-16 source) keep their positions
    text = _text(300) + "\n\nemoji 😀 then 漢字 and a lone \ud800 surrogate.\n\n" + _text(50)
    config = ChunkingConfig(chunk_size=120, chunk_overlap=20)
    splitter = ProcessSplitter(nice=0, min_chars=1000)
    try:
        assert splitter(text, config) == split_document(text, config)
    finally:
        splitter._reset()
    assert list(tmp_path.iterdir()) == []  # type: ignore[attr-defined]
