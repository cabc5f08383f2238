"""Parse throughput per format (issue 15), on files made by the tests' builders, in this process (no worker
pool): each ``bench_<format>() -> dict`` returns its figures; run all with

    python benchmarks/parse_formats.py [format ...]

Prints one JSON object (format → figures).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _rate(parse: Callable[[], object], size: int, seconds: float = 3.0) -> dict[str, float]:
    """Parses repeatedly for about ``seconds``; files/s and MB/s of input."""
    parse()  # warm-up: imports, first-use caches
    runs, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        parse()
        runs += 1
    elapsed = time.perf_counter() - start
    return {"files_per_s": round(runs / elapsed, 1), "mb_per_s": round(runs * size / elapsed / 1e6, 2),
            "ms_per_file": round(1000 * elapsed / runs, 1), "input_kb": round(size / 1024, 1)}


# --- e-mail (.eml, .msg) ----------------------------------------------------------------------------------


def _mail_attachments() -> list[tuple[str, bytes, str]]:
    from tests.adapters.parsers.test_eml import png
    from tests.adapters.parsers.test_parsers import make_docx, make_pdf

    pages = [f"Page {n}: revenue and costs for the quarter, line {n}." for n in range(1, 4)]
    csv = "".join(f"row{i},{i * 3},{i * 7}\n" for i in range(200)).encode()
    return [("report.pdf", make_pdf(pages), "application/pdf"),
            ("guide.docx", make_docx(),
             "application/vnd.openxmlformats-officedocument.wordprocessingml.document"),
            ("budget.csv", b"name,a,b\n" + csv, "text/csv"),
            ("photo.png", png("", (640, 480)), "image/png")]


_BODY = "Hello team,\n\n" + "The quarterly numbers are attached; see the report for details.\n" * 20


def bench_eml() -> dict[str, object]:
    """A typical mail (text body + HTML alternative, PDF, DOCX, CSV, PNG attachments), a mail with 500
    small attachments (100 parsed, the rest named in ``skipped``), and one nested 10 deep."""
    from email.message import EmailMessage

    from knora.adapters.parsers.registry import parse_bytes
    from knora.ports.parser import ParseOptions

    opts = ParseOptions(ocr=False)
    m = EmailMessage()
    m["From"], m["To"], m["Subject"] = "ann@example.com", "team@example.com", "Quarterly numbers"
    m.set_content(_BODY)
    m.add_alternative("<p>" + _BODY.replace("\n", "<br>") + "</p>", subtype="html")
    for name, data, mime in _mail_attachments():
        main, sub = mime.split("/")
        m.add_attachment(data, maintype=main, subtype=sub, filename=name)
    typical = m.as_bytes()
    many = EmailMessage()
    many["From"], many["Subject"] = "bot@example.com", "500 attachments"
    many.set_content("see attached")
    for i in range(500):
        many.add_attachment(f"note {i}\n".encode(), maintype="text", subtype="plain", filename=f"n{i}.txt")
    many_bytes = many.as_bytes()
    inner = EmailMessage()
    inner["From"], inner["Subject"] = "a@example.com", "level 0"
    inner.set_content("innermost")
    for level in range(1, 11):
        outer = EmailMessage()
        outer["From"], outer["Subject"] = "a@example.com", f"level {level}"
        outer.set_content(f"body {level}")
        outer.add_attachment(inner)
        inner = outer
    deep = inner.as_bytes()
    return {"typical": _rate(lambda: parse_bytes(typical, "m.eml", options=opts), len(typical)),
            "attachments_500": _rate(lambda: parse_bytes(many_bytes, "m.eml", options=opts), len(many_bytes),
                                     2.0),
            "nested_10": _rate(lambda: parse_bytes(deep, "m.eml", options=opts), len(deep), 1.0)}


def bench_msg() -> dict[str, object]:
    """The same typical mail as an Outlook item (written by ``tests/fakes/cfb.py``), and 100 attachments."""
    from knora.adapters.parsers.registry import parse_bytes
    from knora.ports.parser import ParseOptions
    from tests.fakes.cfb import MsgAttachment, MsgSpec, make_msg

    opts = ParseOptions(ocr=False)
    typical = make_msg(MsgSpec(subject="Quarterly numbers", body=_BODY, sender_name="Ann",
                               sender_email="ann@example.com", to="Team",
                               attachments=[MsgAttachment(n, d, mime=t) for n, d, t in _mail_attachments()]))
    many = make_msg(MsgSpec(subject="100 attachments", body="see attached",
                            attachments=[MsgAttachment(f"n{i}.txt", f"note {i}\n".encode())
                                         for i in range(100)]))
    return {"typical": _rate(lambda: parse_bytes(typical, "m.msg", options=opts), len(typical)),
            "attachments_100": _rate(lambda: parse_bytes(many, "m.msg", options=opts), len(many), 2.0)}


# --- end of e-mail ------------------------------------------------------------------------------------------


def main(argv: list[str]) -> None:
    benches = {name.removeprefix("bench_"): fn for name, fn in globals().items()
               if name.startswith("bench_") and callable(fn)}
    chosen = argv or sorted(benches)
    print(json.dumps({name: benches[name]() for name in chosen}))


if __name__ == "__main__":
    main(sys.argv[1:])
