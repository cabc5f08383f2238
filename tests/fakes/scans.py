"""Fake "scanned" pages for OCR tests and ``benchmarks/parse.py``: lines of text rendered with Pillow at a
scanner's resolution (200 dpi by default), on an off-white page with sensor noise, dust specks and a slight
blur, never rotated. Deterministic: the same arguments give the same pixels.

API (kept stable; other tests build scanned PDFs with it):

- ``render_pages(lines, **page) -> list[Image.Image]``: grayscale ("L") pages, text wrapped to the page width
  and flowed onto as many pages as it needs.
- ``render_scan(lines, **page) -> Image.Image``: exactly one page (ValueError if the text does not fit).
- ``scan_png(lines, **page) -> bytes``, ``scan_jpeg(lines, quality=85, **page) -> bytes``: one encoded page.
- ``scanned_pdf(pages, **page) -> bytes``: a PDF of image-only pages (no text layer), one per item of
  ``pages`` (each a list of lines), written by Pillow at the pages' dpi.
- ``page`` keywords: ``dpi=200``, ``font_pt=12.0``, ``width_in=8.27``, ``height_in=11.69`` (A4; ``None`` =
  as tall as the text), ``margin_in=0.8``, ``noise=1.0`` (0 = clean), ``seed=0``, ``font=None`` (a path;
  by default a CJK font when a line holds CJK characters, else DejaVu Sans).
- ``font_path(cjk) -> Path``: the font used; raises ``FontMissing`` naming how to install it (``make fonts``).
- ``ENGLISH``, ``CHINESE``: sample paragraphs; ``sample_lines(lang, count, seed)`` picks ``count`` of them.
- ``char_accuracy(got, want) -> float``: 1 - edit distance / longer length, whitespace ignored (OCR's figure).
"""

from __future__ import annotations

import io
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import numpy as np
from PIL import Image, ImageDraw, ImageFilter, ImageFont

INSTALL_HINT = ("run `make fonts` (as root: apt-get install fonts-wqy-zenhei fonts-dejavu-core; "
                "or `sudo make fonts`)")

_CJK_FONTS = (
    "/usr/share/fonts/truetype/wqy/wqy-zenhei.ttc",  # fonts-wqy-zenhei (what `make fonts` installs)
    "/usr/share/fonts/truetype/wqy/wqy-microhei.ttc",
    "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc",
)
_LATIN_FONTS = (
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",  # fonts-dejavu-core
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
)


class FontMissing(RuntimeError):
    """No font for the script asked for is installed; the message says how to install one."""


def font_path(cjk: bool) -> Path:
    """The font file used for CJK (``cjk=True``) or Latin text."""
    for candidate in _CJK_FONTS if cjk else _LATIN_FONTS:
        if Path(candidate).is_file():
            return Path(candidate)
    kind = "CJK (Chinese)" if cjk else "Latin"
    raise FontMissing(f"no {kind} font found (looked for {', '.join(_CJK_FONTS if cjk else _LATIN_FONTS)}): "
                      f"{INSTALL_HINT}")


def has_cjk(text: str) -> bool:
    return any("\u3000" <= ch <= "\u9fff" or "\uf900" <= ch <= "\ufaff" or "\uff00" <= ch <= "\uffef"
               for ch in text)


def _wrap(line: str, font: ImageFont.FreeTypeFont, width: float) -> list[str]:
    """Greedy wrap to ``width`` pixels: at spaces for words, anywhere between CJK characters."""
    if not line.strip():
        return [""]
    out: list[str] = []
    current = ""
    tokens = _tokens(line)
    for token in tokens:
        candidate = current + token
        if current and font.getlength(candidate.rstrip()) > width:
            out.append(current.rstrip())
            current = token.lstrip()
        else:
            current = candidate
    if current.strip():
        out.append(current.rstrip())
    return out


def _tokens(line: str) -> list[str]:
    """Words with their trailing space; each CJK character on its own."""
    tokens: list[str] = []
    word = ""
    for ch in line:
        if has_cjk(ch):
            if word:
                tokens.append(word)
                word = ""
            tokens.append(ch)
        elif ch == " ":
            tokens.append(word + " ")
            word = ""
        else:
            word += ch
    if word:
        tokens.append(word)
    return tokens


def _age(page: Image.Image, noise: float, seed: int) -> Image.Image:
    """What a flatbed scanner adds: an off-white background, sensor noise, dust, a slight blur."""
    if noise <= 0:
        return page
    rng = np.random.default_rng(seed)
    pixels = np.asarray(page.filter(ImageFilter.GaussianBlur(0.5 * noise)), dtype=np.float32)
    pixels = 18.0 + pixels * (232.0 / 255.0)  # ink ~18, paper ~250
    pixels += rng.normal(0.0, 9.0 * noise, pixels.shape)
    specks = rng.random(pixels.shape) < 0.0004 * noise
    pixels[specks] = rng.uniform(40, 160, int(specks.sum()))
    return Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8), "L")


def render_pages(lines: Sequence[str], *, dpi: int = 200, font_pt: float = 12.0, width_in: float = 8.27,
                 height_in: float | None = 11.69, margin_in: float = 0.8, noise: float = 1.0, seed: int = 0,
                 font: str | Path | None = None) -> list[Image.Image]:
    """``lines`` as grayscale page images (see the module doc for the keywords)."""
    cjk = any(has_cjk(line) for line in lines)
    face = ImageFont.truetype(str(font or font_path(cjk)), size=round(font_pt * dpi / 72))
    width = round(width_in * dpi)
    margin = round(margin_in * dpi)
    line_height = round(face.size * 1.55)
    wrapped = [part for line in lines for part in _wrap(line, face, width - 2 * margin)]
    if height_in is None:
        per_page = max(len(wrapped), 1)
        height = 2 * margin + per_page * line_height
    else:
        height = round(height_in * dpi)
        per_page = max((height - 2 * margin) // line_height, 1)
    pages: list[Image.Image] = []
    for number, first in enumerate(range(0, max(len(wrapped), 1), per_page)):
        page = Image.new("L", (width, height), 255)
        draw = ImageDraw.Draw(page)
        for row, text in enumerate(wrapped[first:first + per_page]):
            draw.text((margin, margin + row * line_height), text, font=face, fill=0)
        aged = _age(page, noise, seed + number)
        aged.info["dpi"] = (dpi, dpi)
        pages.append(aged)
    return pages


def render_scan(lines: Sequence[str], **page: object) -> Image.Image:
    """Exactly one page; ValueError when the lines need more than one."""
    pages = render_pages(lines, **page)  # type: ignore[arg-type]
    if len(pages) != 1:
        raise ValueError(f"the text needs {len(pages)} pages; use render_pages or fewer lines")
    return pages[0]


def scan_png(lines: Sequence[str], **page: object) -> bytes:
    image = render_scan(lines, **page)
    out = io.BytesIO()
    image.save(out, "PNG", dpi=image.info["dpi"])
    return out.getvalue()


def scan_jpeg(lines: Sequence[str], quality: int = 85, **page: object) -> bytes:
    image = render_scan(lines, **page)
    out = io.BytesIO()
    image.save(out, "JPEG", quality=quality, dpi=image.info["dpi"])
    return out.getvalue()


def scanned_pdf(pages: Sequence[Sequence[str]], **page: object) -> bytes:
    """A PDF with one image-only page (no text layer) per item of ``pages``."""
    images = [render_scan(lines, **{**page, "seed": int(str(page.get("seed", 0))) + i})
              for i, lines in enumerate(pages)]
    if not images:
        raise ValueError("a PDF needs at least one page")
    dpi = int(str(page.get("dpi", 200)))
    out = io.BytesIO()
    images[0].save(out, "PDF", resolution=float(dpi), save_all=True, append_images=images[1:])
    return out.getvalue()


ENGLISH = (
    "The quarterly report shows revenue of 4.2 million dollars, up 12 percent on last year.",
    "Payment is due within thirty days of the invoice date unless agreed otherwise in writing.",
    "The warranty covers parts and labour for two years from the date of delivery.",
    "Contact the service desk at extension 4471 before returning any equipment.",
    "All visitors must sign in at reception and wear a badge at all times.",
    "The board approved the new budget on 14 March after a short discussion.",
    "Backups run every night at 02:00 and are kept for ninety days.",
    "Either party may end this agreement with sixty days written notice.",
    "The meeting room on the third floor seats twelve people and has a projector.",
    "Shipping to Europe takes five to seven working days; express takes two.",
    "Passwords must be at least twelve characters long and changed every year.",
    "The pilot plant produced 380 kilograms of resin during the first week.",
)
CHINESE = (
    "本季度营业收入为四百二十万元，比去年同期增长百分之十二。",
    "除非另有书面约定，应在发票日期起三十天内付款。",
    "保修范围包括自交货之日起两年内的零件和人工费用。",
    "退回任何设备之前，请先联系服务台分机四四七一。",
    "所有访客必须在前台登记，并始终佩戴访客证。",
    "董事会在三月十四日经过简短讨论后批准了新预算。",
    "每天夜里两点进行备份，备份文件保留九十天。",
    "任何一方均可提前六十天书面通知终止本协议。",
    "三楼的会议室可容纳十二人，并配有投影仪。",
    "发往欧洲的货物需要五到七个工作日，加急件需要两天。",
    "密码长度至少为十二个字符，并且每年必须更换一次。",
    "试验工厂在第一周生产了三百八十公斤树脂。",
)


def sample_lines(lang: Literal["en", "zh"], count: int, seed: int = 0) -> list[str]:
    """``count`` sample sentences in ``lang``, in a seeded order (repeats once all have been used)."""
    source = list(ENGLISH if lang == "en" else CHINESE)
    rng = random.Random(seed)
    out: list[str] = []
    while len(out) < count:
        batch = source[:]
        rng.shuffle(batch)
        out.extend(batch)
    return out[:count]


def char_accuracy(got: str, want: str) -> float:
    """1 − (Levenshtein distance / length of the longer string), after removing all whitespace: how OCR
    output is scored here (line breaks and the spaces between boxes do not count)."""
    a = "".join(got.split())
    b = "".join(want.split())
    if not a and not b:
        return 1.0
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return 1.0 - previous[-1] / max(len(a), len(b))
