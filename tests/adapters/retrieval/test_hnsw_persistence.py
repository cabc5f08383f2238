"""The embedded engine's saved HNSW graphs: file format, restart + log replay, fallbacks, other writers."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from knora.adapters.retrieval import hnsw_file
from knora.adapters.retrieval.sqlite import SqliteEngine
from knora.adapters.retrieval.vectors import Filter, RowMeta, VectorSet
from knora.domain.search import IndexRow
from knora.ports.retrieval import EngineQuery

DIM = 16
ANN_MIN = 100


def unit(rng: np.random.Generator, n: int, d: int = DIM) -> np.ndarray:
    v = rng.normal(size=(n, d)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def rows(start: int, vecs: np.ndarray, kb: str = "kb") -> list[IndexRow]:
    return [IndexRow(source_id=f"s{start + i}", chunk_id=f"c{start + i}", knowledge_id=f"k{(start + i) % 7}",
                     knowledge_base_id=kb, tenant_id=1, content=f"text {start + i}", embedding=v.tolist())
            for i, v in enumerate(vecs)]


def engine(tmp_path: Path, index: bool = True) -> SqliteEngine:
    return SqliteEngine(tmp_path / "k.db", ann_min_rows=ANN_MIN,
                        index_dir=tmp_path / "index" if index else None)


async def started(tmp_path: Path, data: np.ndarray | None = None) -> SqliteEngine:
    """A started engine on the test's database and index directory; with ``data``, its rows indexed first."""
    eng = engine(tmp_path)
    await eng.start()
    if data is not None:
        await eng.index(rows(0, data))
    return eng


async def top1(eng: SqliteEngine, vec: np.ndarray, k: int = 1) -> list[str]:
    hits = await eng.search(EngineQuery(mode="vector", knowledge_base_ids=["kb"], embedding=vec.tolist(),
                                        top_k=k,
                                        threshold=-1))
    return [h.chunk_id for h in hits]


async def graph(eng: SqliteEngine, probe: np.ndarray) -> VectorSet:
    """Load the KB's set (first search) and wait until its graph job — restore or build, then the save —
    ends."""
    await top1(eng, probe)
    vs = eng._sets[("kb", DIM)]
    assert vs.wait_ann(timeout=60)
    assert vs._ann is not None
    return vs


def graph_file(tmp_path: Path) -> Path:
    files = list((tmp_path / "index").glob("*.hnsw"))
    assert len(files) == 1
    return files[0]


def head(tmp_path: Path) -> int:
    conn = sqlite3.connect(tmp_path / "k.db")
    try:
        return int(conn.execute("SELECT max(seq) FROM knora_ret_log").fetchone()[0])
    finally:
        conn.close()


def in_graph(vs: VectorSet, rowid: int) -> bool:
    return bool(vs._ann.contains(rowid))


@pytest.mark.unit
class TestFileFormat:
    def _index(self, n: int = 200) -> tuple[Any, np.ndarray]:
        from usearch.index import Index

        data = unit(np.random.default_rng(0), n)
        index = Index(ndim=DIM, metric="cos", dtype="i8")
        index.add(np.arange(n, dtype=np.uint64), data)
        return index, data

    def _meta(self, **kw: Any) -> hnsw_file.GraphMeta:
        base: dict[str, Any] = {"db_id": "db", "kb_id": "kb", "dim": DIM, "metric": "cos", "dtype": "i8",
                                "seq": 42,
                                "count": 200, "expansion_search": 128, "recall": 0.97}
        return hnsw_file.GraphMeta(**{**base, **kw})

    def test_round_trip(self, tmp_path: Path) -> None:
        index, data = self._index()
        path = tmp_path / "g.hnsw"
        written = hnsw_file.save(index, path, self._meta())
        assert written.crc32
        assert written.payload_len > 0
        assert written.file_id
        assert not list(tmp_path.glob("*.tmp-*"))  # the temp file was renamed, nothing left behind
        expect = {"db_id": "db", "kb_id": "kb", "dim": DIM, "metric": "cos", "dtype": "i8"}
        got = hnsw_file.load(path, expect)
        assert got is not None
        restored, meta = got
        assert meta == written
        assert meta.seq == 42
        assert len(restored) == 200
        assert restored.expansion_search == 128
        assert int(restored.search(data[7], 1).keys[0]) == 7
        restored.add(1000, data[0])  # a private copy: it takes updates
        restored.remove(3)
        assert len(restored) == 200

    def test_foreign_corrupt_and_truncated_files_are_refused(self, tmp_path: Path) -> None:
        index, _ = self._index()
        path = tmp_path / "g.hnsw"
        hnsw_file.save(index, path, self._meta())
        good = {"db_id": "db", "kb_id": "kb", "dim": DIM, "metric": "cos", "dtype": "i8"}
        for wrong in ({"db_id": "other"}, {"kb_id": "kb2"}, {"dim": 32}, {"dtype": "f16"}):
            assert hnsw_file.load(path, {**good, **wrong}) is None
        raw = bytearray(path.read_bytes())
        raw[len(raw) // 2] ^= 0xFF  # one flipped byte in the graph
        path.write_bytes(bytes(raw))
        assert hnsw_file.load(path, good) is None
        hnsw_file.save(index, path, self._meta())
        path.write_bytes(path.read_bytes()[:-5])  # torn tail
        assert hnsw_file.read_meta(path) is None
        assert hnsw_file.load(path, good) is None
        index.save(str(path))  # a plain usearch file: no trailer
        assert hnsw_file.load(path, good) is None
        path.write_bytes(b"garbage" * 10)
        assert hnsw_file.load(path, good) is None
        assert hnsw_file.load(tmp_path / "missing.hnsw", good) is None

    def test_sidecar_vouches_only_for_its_file(self, tmp_path: Path) -> None:
        index, _ = self._index()
        path = tmp_path / "g.hnsw"
        first = hnsw_file.save(index, path, self._meta())
        hnsw_file.vouch(path, first, 99)
        assert hnsw_file.valid_through(path, first) == 99
        second = hnsw_file.save(index, path, self._meta(seq=50))  # replaced (say by another process)
        assert hnsw_file.valid_through(path, second) == 50


@pytest.mark.integration
class TestRestart:
    async def test_restart_restores_the_file_and_replays_later_writes(self, tmp_path: Path) -> None:
        rng = np.random.default_rng(1)
        data = unit(rng, 300)
        eng = await started(tmp_path, data)
        vs = await graph(eng, data[0])
        assert vs.ann_source == "built"
        assert vs.ann_recall is not None
        assert vs.ann_recall >= 0.9
        saved = hnsw_file.read_meta(graph_file(tmp_path))
        assert saved is not None
        assert saved.seq == head(tmp_path)
        assert saved.count == 300
        await eng.close()

        cli = engine(tmp_path, index=False)  # another process writes while the file exists (and is now stale)
        await cli.start()
        new = unit(rng, 20)
        await cli.index(rows(300, new))
        await cli.delete_chunks(["c1", "c2"])
        moved = unit(rng, 1)
        await cli.index(rows(5, moved))  # c5 re-embedded: a new row id, the old one deleted
        await cli.close()

        again = await started(tmp_path)
        try:
            vs = await graph(again, data[0])
            assert vs.ann_source == "restored"
            assert vs.ann_stats["replayed_rows"] == 20 + 2 + 2  # 20 new, 2 deleted, c5's old and new row
            assert len(vs._ann) == len(vs) == 300 + 20 - 2
            assert vs.ann_recall is not None
            assert vs.ann_recall >= 0.9  # the recall check ran on the restored graph
            assert await top1(again, new[3]) == ["c303"]
            assert await top1(again, moved[0]) == ["c5"]
            assert "c1" not in await top1(again, data[1], 5)
            assert await top1(again, data[10]) == ["c10"]
        finally:
            await again.close()

    async def test_deleting_a_kb_removes_its_graph_file_only(self, tmp_path: Path) -> None:
        rng = np.random.default_rng(4)
        data, other = unit(rng, 200), unit(rng, 200)
        eng = await started(tmp_path)
        try:
            await eng.index(rows(0, data) + rows(1000, other, kb="kb2"))
            await graph(eng, data[0])
            await eng.search(EngineQuery(mode="vector", knowledge_base_ids=["kb2"],
                                         embedding=other[0].tolist(),
                                         top_k=1, threshold=-1))
            assert eng._sets[("kb2", DIM)].wait_ann(timeout=60)
            assert len(list((tmp_path / "index").glob("*.hnsw"))) == 2
            kb_file = hnsw_file.file_for(tmp_path / "index", eng._db_id, "kb", DIM)
            assert kb_file.exists()
            await eng.delete_knowledge_base("kb")
            assert not kb_file.exists()
            assert not kb_file.with_suffix(".seq").exists()
            assert await top1(eng, data[0]) == []
            assert [h.chunk_id for h in await eng.search(EngineQuery(
                mode="vector", knowledge_base_ids=["kb2"], embedding=other[7].tolist(), top_k=1,
                threshold=-1))] == ["c1007"]
        finally:
            await eng.close()
        assert not kb_file.exists()  # closing does not write the deleted KB's graph back
        assert len(list((tmp_path / "index").glob("*.hnsw"))) == 1

    async def test_deletes_and_upserts_after_restore_follow_the_graph_and_are_saved(self,
                                                                                    tmp_path: Path) -> None:
        rng = np.random.default_rng(2)
        data = unit(rng, 300)
        eng = await started(tmp_path, data)
        await graph(eng, data[0])
        await eng.close()

        eng = await started(tmp_path)
        vs = await graph(eng, data[0])
        assert vs.ann_source == "restored"
        assert vs.ann_stats["replayed_rows"] == 0
        rid = 8  # c7's row id (ids start at 1)
        await eng.delete_chunks(["c7"])
        assert await top1(eng, data[7]) != ["c7"]
        assert not in_graph(vs, rid)
        extra = unit(rng, 5)
        await eng.index(rows(400, extra))
        assert await top1(eng, extra[2]) == ["c402"]
        assert len(vs._ann) == len(vs) == 304
        dirty = vs._dirty
        await eng.set_enabled(["c20"], False)  # a flag, not a vector: the graph is left alone
        assert await top1(eng, data[20]) != ["c20"]
        assert vs._dirty == dirty
        await eng.close()  # changed since the last save: close saves
        meta = hnsw_file.read_meta(graph_file(tmp_path))
        assert meta is not None
        assert meta.seq == head(tmp_path)
        assert meta.count == 304

        eng = await started(tmp_path)
        try:
            vs = await graph(eng, data[0])
            assert vs.ann_source == "restored"
            assert vs.ann_stats["replayed_rows"] == 0
            assert await top1(eng, extra[4]) == ["c404"]
            assert await top1(eng, data[7]) != ["c7"]
        finally:
            await eng.close()

    async def test_close_vouches_for_an_unchanged_file_when_other_kbs_move_the_log(self,
                                                                                   tmp_path: Path) -> None:
        rng = np.random.default_rng(3)
        data = unit(rng, 200)
        eng = await started(tmp_path, data)
        await graph(eng, data[0])
        await eng.index(rows(1000, unit(rng, 10), kb="other"))  # another KB's writes move the log head
        await top1(eng, data[0])  # the set catches up (nothing of its own changed)
        await eng.close()
        path = graph_file(tmp_path)
        meta = hnsw_file.read_meta(path)
        assert meta is not None
        assert meta.seq < head(tmp_path)
        assert hnsw_file.valid_through(path, meta) == head(tmp_path)
        _trim_log(tmp_path, keep_after=head(tmp_path))  # the log no longer reaches back to the file's own seq

        eng = await started(tmp_path)
        try:
            vs = await graph(eng, data[0])
            assert vs.ann_source == "restored"  # the sidecar vouched for it
        finally:
            await eng.close()


def _trim_log(tmp_path: Path, keep_after: int) -> None:
    conn = sqlite3.connect(tmp_path / "k.db")
    try:
        conn.execute("DELETE FROM knora_ret_log WHERE seq < ?", (keep_after,))
        conn.commit()
    finally:
        conn.close()


@pytest.mark.integration
class TestFallbacks:
    async def _saved(self, tmp_path: Path) -> np.ndarray:
        rng = np.random.default_rng(4)
        data = unit(rng, 300)
        eng = await started(tmp_path, data)
        await graph(eng, data[0])
        await eng.close()
        return data

    async def _rebuilt(self, tmp_path: Path, data: np.ndarray, rows_expected: int = 300) -> VectorSet:
        eng = await started(tmp_path)
        try:
            first = await top1(eng, data[9])  # exact while the graph is rebuilt: the right answer regardless
            assert first == ["c9"]
            vs = await graph(eng, data[0])
            assert vs.ann_source == "built"
            assert len(vs._ann) == len(vs) == rows_expected
            assert await top1(eng, data[42]) == ["c42"]
            return vs
        finally:
            await eng.close()

    async def test_corrupt_file_rebuilds(self, tmp_path: Path) -> None:
        data = await self._saved(tmp_path)
        path = graph_file(tmp_path)
        raw = bytearray(path.read_bytes())
        raw[100] ^= 0x55
        path.write_bytes(bytes(raw))
        await self._rebuilt(tmp_path, data)
        meta = hnsw_file.read_meta(path)  # and the rebuilt graph replaced the bad file
        assert meta is not None
        assert hnsw_file.load(path, {"kb_id": "kb", "dim": DIM}) is not None

    async def test_trimmed_log_rebuilds(self, tmp_path: Path) -> None:
        data = await self._saved(tmp_path)
        cli = engine(tmp_path, index=False)
        await cli.start()
        await cli.index(rows(300, unit(np.random.default_rng(5), 10)))
        await cli.close()
        _trim_log(tmp_path, keep_after=head(tmp_path))  # the entries after the file's seq are gone
        await self._rebuilt(tmp_path, data, rows_expected=310)

    async def test_foreign_file_rebuilds(self, tmp_path: Path) -> None:
        data = await self._saved(tmp_path)
        path = graph_file(tmp_path)
        meta = hnsw_file.read_meta(path)
        assert meta is not None
        got = hnsw_file.load(path, {})
        assert got is not None
        # same name, but written for another database (say a restored backup's): refused by its trailer
        hnsw_file.save(got[0], path, hnsw_file.GraphMeta(**{**meta.__dict__, "db_id": "another-db"}))
        await self._rebuilt(tmp_path, data)

    async def test_file_from_a_later_state_than_the_database_rebuilds(self, tmp_path: Path) -> None:
        data = await self._saved(tmp_path)
        path = graph_file(tmp_path)
        got = hnsw_file.load(path, {})
        assert got is not None
        # the database was restored from an older backup: same db id, but the file claims a sequence it never
        # had
        hnsw_file.save(got[0], path, hnsw_file.GraphMeta(**{**got[1].__dict__, "seq": head(tmp_path) + 50}))
        await self._rebuilt(tmp_path, data)

    @pytest.mark.parametrize("damage", ["wrong_key", "wrong_vector"])
    async def test_file_that_disagrees_with_the_rows_rebuilds(self, tmp_path: Path, damage: str) -> None:
        data = await self._saved(tmp_path)
        path = graph_file(tmp_path)
        got = hnsw_file.load(path, {})
        assert got is not None
        index, meta = got
        index.remove(5)  # a graph whose trailer claims the same state, but with a row it should not have ...
        index.add(99_999 if damage == "wrong_key" else 5, -data[4])  # ... or a wrong vector
        hnsw_file.save(index, path, meta)
        await self._rebuilt(tmp_path, data)


@pytest.mark.integration
class TestTwoProcesses:
    async def test_both_processes_keep_their_graphs_and_files_valid(self, tmp_path: Path) -> None:
        rng = np.random.default_rng(6)
        data = unit(rng, 300)
        server = await started(tmp_path, data)
        vs = await graph(server, data[0])
        cli = await started(tmp_path)  # the CLI: same database, same index directory
        try:
            more = unit(rng, 30)
            await cli.index(rows(300, more))
            await cli.delete_chunks(["c0"])
            assert await top1(server, more[7]) == ["c307"]  # the server replays the log into its graph
            assert server._sets[("kb", DIM)] is vs
            assert len(vs._ann) == len(vs) == 329
            cvs = await graph(cli, more[1])  # the CLI restores the server's file and replays the same writes
            assert cvs.ann_source == "restored"
            assert len(cvs._ann) == 329
            await cli.close()  # saves its graph (it changed since the restore)
            await server.index(rows(500, unit(rng, 3)))
            assert await top1(server, data[3]) == ["c3"]
        finally:
            await server.close()  # overwrites the CLI's file with its own, equally valid one
        fresh = await started(tmp_path)
        try:
            fvs = await graph(fresh, data[0])
            assert fvs.ann_source == "restored"
            assert len(fvs._ann) == len(fvs) == 332
            assert await top1(fresh, more[29]) == ["c329"]
            assert "c0" not in await top1(fresh, data[0], 3)
        finally:
            await fresh.close()


@pytest.mark.unit
class TestChangesDuringAJob:
    def test_rows_changed_while_the_graph_is_being_saved_are_searched_then_applied(self,
                                                                                   tmp_path: Path) -> None:
        rng = np.random.default_rng(7)
        data = unit(rng, 400)
        meta = [RowMeta(knowledge_id="k", tag_id=None, is_enabled=True, is_recommended=True,
                        knowledge_type="document")] * 400
        store = hnsw_file.FileGraphStore(tmp_path / "g.hnsw", {"db_id": "d", "kb_id": "kb", "dim": DIM,
                                                               "metric": "cos", "dtype": "i8"},
                                         lambda a, b: set())
        vs = VectorSet(DIM, ann_min_rows=10**9, store=store)
        vs.upsert(list(range(400)), data, meta)
        vs.build_ann_now()
        assert vs.wait_ann(timeout=30)
        assert store.saved is not None
        assert store.saved.count == 400
        with vs.lock:
            vs._begin_job()  # as a background save does: the graph is read-only until it ends
        new = unit(rng, 1)
        vs.upsert([1000], new, meta[:1])
        vs.remove([3])
        assert not in_graph(vs, 1000)
        assert in_graph(vs, 3)
        assert vs.search(new[0], 1, -1.0, Filter())[0][0] == 1000  # found through the pending list
        assert all(r != 3 for r, _ in vs.search(data[3], 5, -1.0, Filter()))
        vs._save_job()
        assert in_graph(vs, 1000)
        assert not in_graph(vs, 3)
        assert not vs._pending
        assert not vs._ann_busy
        assert store.saved.count == 400  # the file is the graph as of the job's start

    def test_f16_graphs_work_too(self) -> None:
        rng = np.random.default_rng(8)
        data = unit(rng, 300)
        vs = VectorSet(DIM, ann_min_rows=10**9, ann_dtype="f16")
        vs.upsert(list(range(300)), data, [RowMeta("k", None, True, True, "document")] * 300)
        vs.build_ann_now()
        assert vs._ann is not None
        assert str(vs._ann.dtype).endswith("F16")
        assert vs.search(data[11], 1, -1.0, Filter())[0][0] == 11

    def test_removals_past_the_share_rebuild_the_graph_while_the_old_one_serves(self) -> None:
        rng = np.random.default_rng(9)
        data = unit(rng, 400)
        meta = [RowMeta("k", None, True, True, "document")] * 400
        vs = VectorSet(DIM, ann_min_rows=10**9, rebuild_share=0.3, rebuild_min=50)
        vs.upsert(list(range(400)), data, meta)
        vs.build_ann_now()
        first = vs._ann
        # re-embedding 100 rows (new row ids, old ones removed): 100 removals ≤ 0.3 × 400, no rebuild yet
        vs.upsert(list(range(1000, 1100)), data[:100], meta[:100])
        vs.remove(list(range(100)))
        assert vs._ann is first
        assert not vs._ann_busy
        vs.upsert(list(range(2000, 2100)), data[100:200], meta[:100])
        vs.remove(list(range(100, 200)))  # 200 removals > 0.3 × 400: a rebuild starts in the background
        assert vs.wait_ann(timeout=60)
        assert vs._ann is not first
        assert not vs._ann_busy
        assert vs._graph_removed == 0
        assert len(vs._ann) == len(vs) == 400
        assert in_graph(vs, 2050)
        assert in_graph(vs, 300)
        assert not in_graph(vs, 150)  # the new graph is the set
        assert 2050 in [r for r, _ in vs.search(data[150], 10, -1.0, Filter())]
        assert 300 in [r for r, _ in vs.search(data[300], 10, -1.0, Filter())]
