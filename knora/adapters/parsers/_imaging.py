"""Opening images from untrusted bytes with bounded memory, shared by the image parser, the OCR engine and any
parser that meets embedded images (PDF, office files).

An image's size is read from its header before any pixel is decoded: a 20,000 × 20,000 PNG is a few hundred
KB on disk and 1.2 GB decoded. Above ``MAX_PIXELS`` an image is refused with its size in the reason, except a
JPEG, which its decoder can shrink while it decodes (1/2, 1/4 or 1/8 scale) for the price of the smaller
image. Pillow's own decompression-bomb check (an error above ~179 megapixels at open) stays on as a second
line.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import TYPE_CHECKING

from knora.ports.parser import ParseError

if TYPE_CHECKING:
    from PIL import Image

MAX_PIXELS = 50_000_000  # a 48-megapixel phone photo decodes; ~150 MB as RGB
MAX_FRAMES = 200  # pages of a multi-frame TIFF read at most
VIEW_MAX_SIDE = 2048  # the copy kept for the chunk viewer
VIEW_MAX_BYTES = 2 * 1024 * 1024  # a PNG copy larger than this is stored as JPEG instead
# Formats Pillow may open from untrusted bytes. Not "all it knows": its EPS plugin runs Ghostscript, and
# exotic decoders are more attack surface than any document needs.
IMAGE_FORMATS = ("PNG", "JPEG", "WEBP", "TIFF", "BMP", "GIF")  # a multi-picture JPEG opens as "MPO"


@dataclass(frozen=True)
class Probe:
    """What an image's header says: its format (Pillow's name: PNG, JPEG, TIFF …) and size in pixels."""

    format: str
    width: int
    height: int

    @property
    def pixels(self) -> int:
        return self.width * self.height


def _pil() -> None:
    """Pillow, imported on first use (parsers import their libraries lazily); ParseError when missing."""
    try:
        import PIL.Image  # noqa: F401
    except ImportError as exc:  # pragma: no cover - pillow is a dependency
        raise ParseError("images cannot be read here: the Python package 'pillow' is not installed") from exc


def _size_text(width: int, height: int) -> str:
    return f"{width} × {height} pixels ({width * height / 1e6:.0f} megapixels)"


def open_image(data: bytes, *, what: str = "image",
               formats: tuple[str, ...] = IMAGE_FORMATS) -> Image.Image:
    """The image in ``data``, opened lazily (header read, pixels not decoded yet). ParseError when the bytes
    are not an image in one of ``formats``, or when it is too large to decode (see ``check_size``)."""
    _pil()
    from PIL import Image, UnidentifiedImageError

    try:
        image = Image.open(io.BytesIO(data), formats=list(formats))
    except Image.DecompressionBombError as exc:  # Pillow's own check, above ~179 megapixels
        size = _header_size(data, formats)
        detail = _size_text(*size) if size else str(exc).rstrip(".")
        raise ParseError(f"refusing the {what}: it is {detail}, above the limit of "
                         f"{MAX_PIXELS // 1_000_000} megapixels (downscale it before uploading)") from exc
    except UnidentifiedImageError as exc:
        raise ParseError(f"the {what} is not an image format that can be read (png, jpeg, webp, tiff, bmp, "
                         "gif), or it is damaged") from exc
    except (OSError, ValueError, SyntaxError) as exc:  # Pillow plugins raise these for broken headers
        raise ParseError(f"the {what} is damaged and cannot be read: {exc}") from exc
    check_size(image, what=what)
    return image


def _header_size(data: bytes, formats: tuple[str, ...]) -> tuple[int, int] | None:
    """The size an image's header claims, read by the format's plugin directly (``Image.open`` refuses to
    return an image above Pillow's limit); None when no plugin reads it."""
    from PIL import Image

    Image.init()
    for fmt in formats:
        factory, accept = Image.OPEN.get(fmt, (None, None))
        if factory is None or (accept is not None and not accept(data[:16])):
            continue
        try:
            image = factory(io.BytesIO(data), "")
        except Exception:  # noqa: BLE001, S112 - not this format; try the next
            continue
        return image.size
    return None


def check_size(image: Image.Image, *, what: str = "image") -> None:
    """Refuse a frame above ``MAX_PIXELS`` unless its decoder can shrink it (JPEG draft mode), in which case
    the draft is set so that decoding gives at most ``MAX_PIXELS``."""
    width, height = image.size
    if width <= 0 or height <= 0:
        raise ParseError(f"the {what} has no pixels ({width} × {height})")
    if width * height <= MAX_PIXELS:
        return
    if image.format in ("JPEG", "MPO"):
        for scale in (2, 4, 8):
            if (width // scale) * (height // scale) <= MAX_PIXELS:
                image.draft(None, (max(width // scale, 1), max(height // scale, 1)))
                if image.size[0] * image.size[1] <= MAX_PIXELS * 1.01:
                    return
                break
    raise ParseError(f"refusing the {what}: it is {_size_text(width, height)}, above the limit of "
                     f"{MAX_PIXELS // 1_000_000} megapixels (downscale it before uploading)")


def decode(image: Image.Image, *, what: str = "image") -> Image.Image:
    """The current frame's pixels as an RGB or L image (EXIF orientation applied, transparency flattened on
    white). ParseError for a truncated or corrupt image."""
    from PIL import Image as PILImage
    from PIL import ImageOps

    try:
        image.load()
        frame: PILImage.Image = image
        if "exif" in image.info or image.format in ("JPEG", "TIFF", "WEBP"):
            frame = ImageOps.exif_transpose(image)
        if frame.mode in ("RGBA", "LA", "PA") or (frame.mode == "P" and "transparency" in frame.info):
            rgba = frame.convert("RGBA")
            flat = PILImage.new("RGB", rgba.size, (255, 255, 255))
            flat.paste(rgba, mask=rgba.getchannel("A"))
            return flat
        if frame.mode in ("1", "I;16", "I;16B", "I;16L", "I", "F"):
            return frame.convert("L") if frame.mode == "1" else _to_l(frame)
        if frame.mode not in ("RGB", "L"):
            return frame.convert("RGB")
        return frame
    except ParseError:
        raise
    except MemoryError:
        raise
    except Exception as exc:  # noqa: BLE001 - Pillow raises OSError, ValueError, SyntaxError, struct.error …
        raise ParseError(f"the {what} is damaged or truncated and cannot be decoded: {exc}") from exc


def _to_l(frame: Image.Image) -> Image.Image:
    """16-bit, 32-bit and float grayscale (scientific TIFFs) stretched to 8 bits over their own range."""
    wide = frame if frame.mode in ("I", "F") else frame.convert("I")
    extrema = wide.getextrema()
    lo, hi = (float(extrema[0]), float(extrema[1])) if isinstance(extrema[0], (int, float)) else (0.0, 255.0)
    scale = 255.0 / ((hi - lo) or 1.0)
    return wide.point(lambda v: v * scale - lo * scale).convert("L")


def shrink(image: Image.Image, *, max_side: int = 0, max_pixels: int = 0) -> Image.Image:
    """``image`` scaled down (never up) so that its longer side is at most ``max_side`` and its area at most
    ``max_pixels`` (0 = that bound off)."""
    from PIL import Image as PILImage

    width, height = image.size
    scale = 1.0
    if max_side and max(width, height) > max_side:
        scale = max_side / max(width, height)
    if max_pixels and width * height * scale * scale > max_pixels:
        scale = (max_pixels / (width * height)) ** 0.5
    if scale >= 1.0:
        return image
    size = (max(round(width * scale), 1), max(round(height * scale), 1))
    return image.resize(size, PILImage.Resampling.LANCZOS)


def encode(image: Image.Image, *, prefer_jpeg: bool = False) -> tuple[bytes, str]:
    """PNG (lossless: scans and screenshots) unless ``prefer_jpeg`` (photos) or the PNG would exceed
    ``VIEW_MAX_BYTES``; returns the bytes and their MIME type."""
    if not prefer_jpeg:
        out = io.BytesIO()
        image.save(out, "PNG", optimize=False, compress_level=6)
        if out.tell() <= VIEW_MAX_BYTES:
            return out.getvalue(), "image/png"
    out = io.BytesIO()
    image.convert("RGB" if image.mode != "L" else "L").save(out, "JPEG", quality=85)
    return out.getvalue(), "image/jpeg"


def view_copy(image: Image.Image, *, prefer_jpeg: bool = False) -> tuple[bytes, str, int, int]:
    """A bounded copy for the chunk viewer: at most ``VIEW_MAX_SIDE`` a side; bytes, MIME, width, height."""
    small = shrink(image, max_side=VIEW_MAX_SIDE)
    data, mime = encode(small, prefer_jpeg=prefer_jpeg)
    return data, mime, small.width, small.height
