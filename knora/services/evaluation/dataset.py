"""A BEIR-layout evaluation set, loaded and checked: ``corpus.jsonl`` (``_id``, ``title``, ``text``),
``queries.jsonl`` (``_id``, ``text``), ``qrels.tsv`` (header ``query-id corpus-id score``, graded, tab
separated) and optionally ``answers.jsonl`` (``_id`` = query id, ``answers`` = gold strings).

Every defect is reported as a ``DatasetError`` naming the file and the line, so a user can fix the set
instead of reading a traceback: a missing file, a line that is not a JSON object, a missing or non-string
field, a duplicate id, a qrels line with the wrong number of columns, a non-numeric score, a qrel naming a
query or passage the set does not have, and an empty set. Queries without a positive qrel are not evaluated
(as in BEIR); they are counted in ``Dataset.unjudged``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from knora.domain.errors import BadRequest

CORPUS, QUERIES, QRELS, ANSWERS = "corpus.jsonl", "queries.jsonl", "qrels.tsv", "answers.jsonl"
QRELS_HEADER = ("query-id", "corpus-id", "score")


class DatasetError(BadRequest):
    """A defect of the set, with the file (and line, 1-based) it is in."""

    def __init__(self, file: str, message: str, line: int | None = None) -> None:
        where = f"{file}:{line}" if line is not None else file
        super().__init__(f"{where}: {message}", details={"file": file, "line": line})
        self.file = file
        self.line = line


@dataclass(frozen=True)
class Passage:
    id: str
    title: str
    text: str


@dataclass(frozen=True)
class Query:
    id: str
    text: str


@dataclass
class Dataset:
    name: str
    corpus: list[Passage]
    queries: list[Query]  # only the judged ones (at least one qrel with a positive score), in file order
    qrels: dict[str, dict[str, float]]  # query id → corpus id → gain (positive gains only)
    answers: dict[str, list[str]] = field(default_factory=dict)
    unjudged: int = 0

    def limited(self, limit: int | None) -> Dataset:
        """The first ``limit`` judged queries (all when ``None`` or 0); corpus and qrels unchanged."""
        if not limit or limit >= len(self.queries):
            return self
        return Dataset(self.name, self.corpus, self.queries[:limit], self.qrels, self.answers, self.unjudged)


def _jsonl(path: Path, required: tuple[str, ...], optional: tuple[str, ...] = ()
           ) -> list[tuple[int, dict[str, object]]]:
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DatasetError(path.name, "file is missing") from None
    except UnicodeDecodeError as exc:
        raise DatasetError(path.name, f"not UTF-8 ({exc.reason} at byte {exc.start})") from None
    out: list[tuple[int, dict[str, object]]] = []
    seen: set[str] = set()
    for no, line in enumerate(raw.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DatasetError(path.name, f"not valid JSON ({exc.msg})", no) from None
        if not isinstance(obj, dict):
            raise DatasetError(path.name, "expected a JSON object", no)
        for key in required:
            if key not in obj:
                raise DatasetError(path.name, f"missing field {key!r}", no)
        for key in (*required, *optional):
            if key in obj and key != "answers" and not isinstance(obj[key], (str, int)):
                raise DatasetError(path.name, f"field {key!r} must be a string", no)
        ident = str(obj["_id"])
        if not ident.strip():
            raise DatasetError(path.name, "empty '_id'", no)
        if ident in seen:
            raise DatasetError(path.name, f"duplicate _id {ident!r}", no)
        seen.add(ident)
        out.append((no, obj))
    if not out:
        raise DatasetError(path.name, "no entries")
    return out


def _qrels(path: Path, query_ids: set[str], corpus_ids: set[str]) -> dict[str, dict[str, float]]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise DatasetError(path.name, "file is missing") from None
    except UnicodeDecodeError as exc:
        raise DatasetError(path.name, f"not UTF-8 ({exc.reason} at byte {exc.start})") from None
    if not lines or tuple(c.strip() for c in lines[0].split("\t")) != QRELS_HEADER:
        raise DatasetError(path.name, "the first line must be the header "
                                      "'query-id<TAB>corpus-id<TAB>score'", 1)
    qrels: dict[str, dict[str, float]] = {}
    for no, line in enumerate(lines[1:], 2):
        if not line.strip():
            continue
        cols = line.split("\t")
        if len(cols) != 3:
            raise DatasetError(path.name, f"expected 3 tab-separated columns, found {len(cols)}", no)
        q, d, s = (c.strip() for c in cols)
        try:
            score = float(s)
        except ValueError:
            raise DatasetError(path.name, f"score {s!r} is not a number", no) from None
        if not math.isfinite(score):
            raise DatasetError(path.name, f"score {s!r} is not a finite number", no)
        if q not in query_ids:
            raise DatasetError(path.name, f"unknown query id {q!r} (not in {QUERIES})", no)
        if d not in corpus_ids:
            raise DatasetError(path.name, f"unknown corpus id {d!r} (not in {CORPUS})", no)
        judged = qrels.setdefault(q, {})
        if d in judged:
            raise DatasetError(path.name, f"duplicate judgement of ({q!r}, {d!r})", no)
        judged[d] = score
    positive = {q: {d: g for d, g in docs.items() if g > 0} for q, docs in qrels.items()}
    positive = {q: docs for q, docs in positive.items() if docs}
    if not positive:
        raise DatasetError(path.name, "no judgement with a positive score")
    return positive


def _answers(path: Path, query_ids: set[str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for no, obj in _jsonl(path, ("_id", "answers")):
        golds = obj["answers"]
        if not isinstance(golds, list) or not all(isinstance(a, str) for a in golds):
            raise DatasetError(path.name, "'answers' must be a list of strings", no)
        if str(obj["_id"]) not in query_ids:
            raise DatasetError(path.name, f"unknown query id {obj['_id']!r} (not in {QUERIES})", no)
        if any(a.strip() for a in golds):
            out[str(obj["_id"])] = [a for a in golds if a.strip()]
    return out


def load_dataset(path: Path) -> Dataset:
    """The set in folder ``path``; raises ``DatasetError`` (a 400) naming the file and line of a defect."""
    if not path.is_dir():
        raise DatasetError(str(path), "not a folder (expected a BEIR-layout folder with corpus.jsonl, "
                                      "queries.jsonl and qrels.tsv)")
    corpus = []
    for _no, obj in _jsonl(path / CORPUS, ("_id", "text"), ("title",)):
        # an empty text is kept (cranfield has one): the passage is indexed by its title alone
        corpus.append(Passage(str(obj["_id"]), str(obj.get("title") or ""), str(obj["text"])))
    queries_all = []
    for no, obj in _jsonl(path / QUERIES, ("_id", "text")):
        if not str(obj["text"]).strip():
            raise DatasetError(QUERIES, "empty 'text'", no)
        queries_all.append(Query(str(obj["_id"]), str(obj["text"])))
    query_ids = {q.id for q in queries_all}
    qrels = _qrels(path / QRELS, query_ids, {p.id for p in corpus})
    answers = _answers(path / ANSWERS, query_ids) if (path / ANSWERS).exists() else {}
    queries = [q for q in queries_all if q.id in qrels]
    return Dataset(path.name, corpus, queries, qrels, answers, unjudged=len(queries_all) - len(queries))
