"""RapidOcrEngine on real "scanned" pages rendered from text (tests/fakes/scans.py), English and Chinese.

The Chinese pages need a CJK font: ``make fonts`` installs it; without it these tests fail with that hint
(``FontMissing``), they do not skip.
"""

from __future__ import annotations

import io
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

from knora.adapters.ocr.rapidocr import RapidOcrEngine, reading_order
from knora.adapters.ocr.registry import load_engine
from knora.ports.ocr import OcrEngine, OcrLine, OcrUnavailable
from knora.ports.parser import ParseError
from tests.fakes.scans import char_accuracy, sample_lines, scan_jpeg, scan_png

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def engine() -> RapidOcrEngine:
    return RapidOcrEngine()


def test_is_the_registered_engine(engine: RapidOcrEngine) -> None:
    assert isinstance(engine, OcrEngine)
    assert load_engine("rapidocr").name == "rapidocr"


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_reads_a_scanned_page(engine: RapidOcrEngine, lang: str) -> None:
    lines = sample_lines(lang, 10, seed=1)  # type: ignore[arg-type]
    result = engine.recognize(scan_png(lines, seed=1))
    assert char_accuracy(result.text, "\n".join(lines)) >= 0.95, result.text
    assert all(line.confidence >= 0.5 for line in result.lines)
    tops = [line.box[1] for line in result.lines]
    assert tops == sorted(tops)  # top to bottom


def test_reads_a_jpeg_and_small_print(engine: RapidOcrEngine) -> None:
    lines = sample_lines("en", 6, seed=2)
    result = engine.recognize(scan_jpeg(lines, quality=70, font_pt=8, height_in=None))
    assert char_accuracy(result.text, "\n".join(lines)) >= 0.95, result.text


def test_boxes_on_one_row_become_one_line_left_to_right(engine: RapidOcrEngine) -> None:
    image = Image.new("L", (1400, 260), 255)
    left = Image.open(io.BytesIO(scan_png(["Invoice number"], width_in=3.0, height_in=None, noise=0,
                                          margin_in=0.2)))
    right = Image.open(io.BytesIO(scan_png(["INV-20417"], width_in=3.0, height_in=None, noise=0,
                                           margin_in=0.2)))
    image.paste(right, (850, 60))  # pasted first: order must come from the boxes, not from drawing
    image.paste(left, (40, 60))
    out = io.BytesIO()
    image.save(out, "PNG")
    result = engine.recognize(out.getvalue())
    assert [line.text for line in result.lines] == ["Invoice number INV-20417"]


def test_reading_order_of_boxes() -> None:
    def box(text: str, x: float, y: float, w: float = 100, h: float = 30) -> OcrLine:
        return OcrLine(text=text, confidence=0.9, box=(x, y, x + w, y + h))

    lines = [box("second", 10, 100), box("B", 300, 4), box("A", 10, 0), box("三", 160, 200),
             box("一二", 10, 202)]
    assert [line.text for line in reading_order(lines)] == ["A B", "second", "一二三"]


def test_a_tall_image_is_read_in_strips_without_losing_or_doubling_lines(engine: RapidOcrEngine) -> None:
    lines = [f"Line {n} of the long receipt" for n in range(1, 41)]
    png = scan_png(lines, width_in=3.0, height_in=None, dpi=150, font_pt=10)
    assert Image.open(io.BytesIO(png)).height > 2.5 * 450
    text = engine.recognize(png).text
    assert char_accuracy(text, "\n".join(lines)) >= 0.95, text
    for n in (1, 13, 27, 40):
        assert text.count(f"Line {n} of") == 1, text


def test_noise_alone_gives_no_text(engine: RapidOcrEngine) -> None:
    assert engine.recognize(scan_png([""], height_in=3.0)).lines == []


def test_a_non_image_is_a_parse_error(engine: RapidOcrEngine) -> None:
    with pytest.raises(ParseError, match="not an image"):
        engine.recognize(b"%PDF-1.7 this is not an image at all")


def test_models_are_never_downloaded(engine: RapidOcrEngine) -> None:
    from rapidocr.utils.download_file import DownloadFile, DownloadFileInput

    params = DownloadFileInput(file_url="https://example.invalid/model.onnx", sha256=None,
                               save_path=Path("/nonexistent/model.onnx"), logger=None)
    with pytest.raises(OcrUnavailable, match="only uses the models inside its package"):
        DownloadFile.run(params)


@pytest.mark.integration
def test_loads_and_reads_with_no_network() -> None:
    """In a new network namespace (no interface but a downed loopback): models load from the wheel."""
    if shutil.which("unshare") is None:
        pytest.fail("util-linux's unshare is needed for this test (apt-get install util-linux)")
    script = (
        "from knora.adapters.ocr.rapidocr import RapidOcrEngine\n"
        "from tests.fakes.scans import scan_png\n"
        "print(RapidOcrEngine().recognize(scan_png(['Offline reading works'], height_in=None)).text)\n"
    )
    done = subprocess.run(["unshare", "-rn", sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT),
                                                       "HOME": "/nonexistent"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Offline reading works"
    assert "INFO" not in done.stderr  # rapidocr's logging is silenced


def test_a_wide_image_keeps_its_text_legible(engine: RapidOcrEngine) -> None:
    """A spreadsheet-like strip 6000 pixels wide (detection is bounded by its area: 1.0 here, 0.995 with
    the longer side fixed at 960)."""
    cells = [f"Region {n} revenue {n * 7 + 3}.{n} million" for n in range(1, 9)]
    lines = ["   ".join(cells[:4]), "   ".join(cells[4:])]
    png = scan_png(lines, width_in=30.0, height_in=None, margin_in=0.3)
    width, height = Image.open(io.BytesIO(png)).size
    assert width >= 6000 > 20 * height
    text = engine.recognize(png).text
    assert char_accuracy(text, "\n".join(lines)) >= 0.95, text


def test_onnxruntime_runs_on_one_thread(engine: RapidOcrEngine) -> None:
    for stage in (engine._ocr.text_det, engine._ocr.text_rec):
        options = stage.session.session.get_session_options()
        assert (options.intra_op_num_threads, options.inter_op_num_threads) == (1, 1)


def test_an_unknown_engine_is_unavailable_not_a_crash() -> None:
    with pytest.raises(OcrUnavailable, match="no OCR engine 'tesseract-9'"):
        load_engine("tesseract-9")
