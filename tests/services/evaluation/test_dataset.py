"""The BEIR loader: a good set loads; every defect names its file and line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from knora.services.evaluation.dataset import DatasetError, load_dataset

pytestmark = pytest.mark.unit


def write_set(root: Path, *, corpus: list[dict[str, object]] | None = None,
              queries: list[dict[str, object]] | None = None, qrels: str | None = None,
              answers: list[dict[str, object]] | None = None) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    corpus = corpus if corpus is not None else [{"_id": "p1", "title": "Tea", "text": "Oolong is oxidised."},
                                                {"_id": "p2", "title": "Sun", "text": "Panels make 400 W."}]
    queries = queries if queries is not None else [{"_id": "q1", "text": "oolong?"},
                                                   {"_id": "q2", "text": "watts?"},
                                                   {"_id": "q3", "text": "unjudged"}]
    (root / "corpus.jsonl").write_text("".join(json.dumps(x) + "\n" for x in corpus))
    (root / "queries.jsonl").write_text("".join(json.dumps(x) + "\n" for x in queries))
    (root / "qrels.tsv").write_text(qrels if qrels is not None
                                    else "query-id\tcorpus-id\tscore\nq1\tp1\t2\nq2\tp2\t1\nq2\tp1\t0\n")
    if answers is not None:
        (root / "answers.jsonl").write_text("".join(json.dumps(x) + "\n" for x in answers))
    return root


def error(path: Path) -> DatasetError:
    with pytest.raises(DatasetError) as info:
        load_dataset(path)
    return info.value


class TestLoad:
    def test_a_good_set(self, tmp_path: Path) -> None:
        ds = load_dataset(write_set(tmp_path / "s", answers=[{"_id": "q2", "answers": ["400 W", " "]}]))
        assert [p.id for p in ds.corpus] == ["p1", "p2"]
        assert [q.id for q in ds.queries] == ["q1", "q2"]  # q3 has no positive judgement
        assert ds.unjudged == 1
        assert ds.qrels == {"q1": {"p1": 2.0}, "q2": {"p2": 1.0}}  # graded; score 0 dropped
        assert ds.answers == {"q2": ["400 W"]}
        assert [q.id for q in ds.limited(1).queries] == ["q1"]

    def test_an_empty_passage_and_graded_gains_load(self, tmp_path: Path) -> None:
        # as in the Cranfield collection: one passage with neither title nor text, gains 1 to 4
        corpus = [{"_id": "p1", "title": "Flow", "text": "Boundary layers."}, {"_id": "p2", "title": "",
                                                                              "text": ""}]
        root = write_set(tmp_path / "s", corpus=corpus,
                         qrels="query-id\tcorpus-id\tscore\nq1\tp1\t4\nq1\tp2\t1\nq2\tp1\t3\n")
        ds = load_dataset(root)
        assert [p.id for p in ds.corpus] == ["p1", "p2"]
        assert ds.qrels == {"q1": {"p1": 4.0, "p2": 1.0}, "q2": {"p1": 3.0}}


class TestDefects:
    def test_missing_files(self, tmp_path: Path) -> None:
        assert "not a folder" in error(tmp_path / "nowhere").message
        root = write_set(tmp_path / "s")
        (root / "qrels.tsv").unlink()
        assert error(root).message == "qrels.tsv: file is missing"
        (root / "corpus.jsonl").unlink()
        assert error(root).message == "corpus.jsonl: file is missing"

    def test_bad_json_lines(self, tmp_path: Path) -> None:
        root = write_set(tmp_path / "s")
        (root / "queries.jsonl").write_text('{"_id": "q1", "text": "a"}\n\n{"_id": "q2", "text": \n')
        e = error(root)
        assert (e.file, e.line) == ("queries.jsonl", 3)
        assert "not valid JSON" in e.message
        (root / "queries.jsonl").write_text('["q1"]\n')
        assert error(root).message == "queries.jsonl:1: expected a JSON object"
        (root / "queries.jsonl").write_text('{"_id": "q1"}\n')
        assert error(root).message == "queries.jsonl:1: missing field 'text'"
        (root / "queries.jsonl").write_text('{"_id": "q1", "text": "a"}\n{"_id": "q1", "text": "b"}\n')
        assert error(root).message == "queries.jsonl:2: duplicate _id 'q1'"
        root = write_set(tmp_path / "t", corpus=[{"_id": "p1", "text": {"no": 1}}])
        assert error(root).message == "corpus.jsonl:1: field 'text' must be a string"

    @pytest.mark.parametrize(("qrels", "message"), [
        ("q1\tp1\t1\n", "qrels.tsv:1: the first line must be the header"),
        ("query-id\tcorpus-id\tscore\nq1\tp1\n", "qrels.tsv:2: expected 3 tab-separated columns, found 2"),
        ("query-id\tcorpus-id\tscore\nq1 p1 1\n", "qrels.tsv:2: expected 3 tab-separated columns, found 1"),
        ("query-id\tcorpus-id\tscore\nq1\tp1\t1\nq2\tp2\thigh\n",
         "qrels.tsv:3: score 'high' is not a number"),
        ("query-id\tcorpus-id\tscore\nq1\tp1\tnan\n", "qrels.tsv:2: score 'nan' is not a finite number"),
        ("query-id\tcorpus-id\tscore\nq9\tp1\t1\n", "qrels.tsv:2: unknown query id 'q9'"),
        ("query-id\tcorpus-id\tscore\nq1\tp9\t1\n", "qrels.tsv:2: unknown corpus id 'p9'"),
        ("query-id\tcorpus-id\tscore\nq1\tp1\t1\nq1\tp1\t2\n", "qrels.tsv:3: duplicate judgement"),
        ("query-id\tcorpus-id\tscore\nq1\tp1\t0\n", "qrels.tsv: no judgement with a positive score"),
    ])
    def test_bad_qrels(self, tmp_path: Path, qrels: str, message: str) -> None:
        assert error(write_set(tmp_path / "s", qrels=qrels)).message.startswith(message)

    def test_empty_sets_and_bad_answers(self, tmp_path: Path) -> None:
        root = write_set(tmp_path / "s", corpus=[])
        assert error(root).message == "corpus.jsonl: no entries"
        root = write_set(tmp_path / "t", answers=[{"_id": "q1", "answers": "Oolong"}])
        assert error(root).message == "answers.jsonl:1: 'answers' must be a list of strings"
        root = write_set(tmp_path / "u", answers=[{"_id": "q7", "answers": ["x"]}])
        assert error(root).message.startswith("answers.jsonl:1: unknown query id 'q7'")
        assert error(root).status == 400
