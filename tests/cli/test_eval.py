"""``knora eval`` end to end on a small generated BEIR folder: real services on a private data dir, the
``local:hash`` embedder, the extractive answerer; JSON and Markdown reports; bad input is exit code 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from knora.cli.main import main
from tests.services.evaluation.test_dataset import write_set

pytestmark = pytest.mark.integration

TOPICS = {
    "tea": ("Oolong tea", "Oolong tea is partially oxidised and rolled into tight balls before drying."),
    "sun": ("Solar panels", "A residential solar panel produces about 400 watts at peak sunlight."),
    "bike": ("Bicycles", "A road bicycle has narrow tyres inflated to about seven bar of pressure."),
    "moon": ("The Moon", "The Moon orbits the Earth once every twenty-seven days at about 384000 km."),
    "rice": ("Rice", "Paddy rice is grown in flooded fields and harvested after about four months."),
}
QUESTIONS = {"q-tea": ("How is oolong tea processed before drying?", "tea", "partially oxidised"),
             "q-sun": ("How many watts does a solar panel produce at peak?", "sun", "400 watts"),
             "q-moon": ("How often does the Moon orbit the Earth?", "moon", "twenty-seven days")}


def small_set(root: Path) -> Path:
    return write_set(
        root, corpus=[{"_id": k, "title": t, "text": x} for k, (t, x) in TOPICS.items()],
        queries=[{"_id": q, "text": text} for q, (text, _, _) in QUESTIONS.items()],
        qrels="query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t2\n" for q, (_, d, _) in QUESTIONS.items())
        + "q-sun\trice\t0\n",
        answers=[{"_id": q, "answers": [a]} for q, (_, _, a) in QUESTIONS.items()])


def test_eval_writes_json_and_markdown_reports(env: Path, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "reports"
    path = small_set(tmp_path / "set")
    assert main(["eval", str(path), "--embedder", "local:hash", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "ndcg@10" in printed
    assert "contains-gold" in printed
    assert str(out) in printed
    [json_path] = list(out.glob("*.json"))
    [md_path] = list(out.glob("*.md"))
    report = json.loads(json_path.read_text())
    assert report["queries"] == 3
    assert report["passages"] == 5
    assert report["embedder"] == "local:hash"
    assert report["retrieval"]["ndcg@10"] == pytest.approx(1.0)  # each question names its passage
    assert report["retrieval"]["recall@10"] == 1.0
    answers = report["answers"]
    assert answers["questions"] == answers["answered"] == 3
    assert answers["errors"] == 0
    assert answers["contains_gold"] == 1.0  # the extractive answerer quotes the passage
    assert 0 < answers["token_f1"] < 1
    assert answers["faithfulness"] is None
    assert {q["query_id"] for q in report["per_query"]} == set(QUESTIONS)
    assert report["per_query"][0]["ranked"][0] == "tea"
    md = md_path.read_text()
    assert md.startswith("# Evaluation: set")
    assert "| ndcg@10 | 1.0000 |" in md
    assert report["knowledge_base_kept"] is False
    assert main(["kb", "list", "--json"]) == 0  # the scratch knowledge base is gone
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1]) == []


def test_eval_keep_then_existing_kb_by_corpus_id(env: Path, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    path = small_set(tmp_path / "set")
    assert main(["eval", str(path), "--keep", "--no-answers", "--json", "--limit", "2",
                 "--out", str(tmp_path / "r")]) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["queries"] == 2
    assert first["answers"] is None
    assert first["knowledge_base_kept"] is True
    # the kept KB is evaluated again as an existing one: its documents carry metadata corpus_id
    assert main(["eval", str(path), "--kb", first["knowledge_base_id"], "--no-answers", "--json",
                 "--fusion", "rrf", "--out", str(tmp_path / "r")]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["mapped_documents"] == 5
    assert again["unmapped_documents"] == 0
    assert again["knowledge_base_id"] == first["knowledge_base_id"]
    assert again["retrieval"]["recall@10"] == 1.0


def test_eval_chunked_indexing(env: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", str(small_set(tmp_path / "set")), "--indexing", "chunked", "--no-answers", "--json",
                 "--mode", "keyword", "--out", str(tmp_path / "r")]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["options"]["indexing"] == "chunked"
    assert report["retrieval"]["mrr@10"] == 1.0


@pytest.mark.parametrize(("qrels", "message"), [
    ("query-id\tcorpus-id\tscore\nq-tea\ttea\n", "qrels.tsv:2: expected 3 tab-separated columns, found 2"),
    ("query-id\tcorpus-id\tscore\nq-tea\tnope\t1\n", "qrels.tsv:2: unknown corpus id 'nope'"),
])
def test_bad_input_is_exit_code_2_naming_the_line(env: Path, tmp_path: Path, qrels: str, message: str,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    root = small_set(tmp_path / "set")
    (root / "qrels.tsv").write_text(qrels)
    assert main(["eval", str(root)]) == 2
    assert message in capsys.readouterr().err


def test_bad_options_and_missing_folder(env: Path, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", str(tmp_path / "nowhere")]) == 2
    assert "not a folder" in capsys.readouterr().err
    assert main(["eval", str(small_set(tmp_path / "set")), "--match-count", "0"]) == 2
    assert "--match-count" in capsys.readouterr().err
    assert main(["eval", str(tmp_path / "set"), "--kb", "missing"]) == 2
    assert "not found" in capsys.readouterr().err
    for option, message in (("--embedder", "embedder 'nope:x': unknown embedding provider 'nope'"),
                            ("--chat-model", "chat model 'nope:x': unknown chat provider 'nope'"),
                            ("--rerank-model", "rerank model 'nope:x': unknown rerank provider 'nope'")):
        assert main(["eval", str(tmp_path / "set"), option, "nope:x"]) == 2
        assert message in capsys.readouterr().err
    assert main(["kb", "list", "--json"]) == 0  # nothing was created for the refused runs
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1]) == []
