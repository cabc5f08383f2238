"""A file's type as the parser registry keys it: its extension (lower case, no dot), or, for the
extension-less files every repository has (``Dockerfile``, ``Makefile``, ``Gemfile`` …), the type of what
they hold; a file whose name says nothing the registry knows (``README``, ``BUGREPORTS``, ``zone.dns``) is
typed by its content: text is plain text, anything else stays unsupported. Ingestion, the CLI's folder walk
and the parser registry all ask here, so they agree."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import PurePosixPath

# base name (lower case) → the type it is parsed as
NAMED_FILES: dict[str, str] = {
    "dockerfile": "dockerfile", "containerfile": "dockerfile", "makefile": "mk", "gnumakefile": "mk",
    "jenkinsfile": "groovy", "gemfile": "rb", "rakefile": "rb", "vagrantfile": "rb", "podfile": "rb",
    "brewfile": "rb",
}
TEXT_TYPE = "txt"  # what a sniffed text file is parsed as
SNIFF_BYTES = 64 * 1024  # how much of a file its content type is judged from
_MAX_CONTROL_SHARE = 0.02  # real text has almost no control characters besides tab, LF, CR, FF, ESC
# formats that are not text whatever their name says (their first bytes)
_BINARY_MAGIC = (b"%PDF", b"PK\x03\x04", b"\x89PNG", b"GIF8", b"\xff\xd8\xff", b"\xd0\xcf\x11\xe0",
                 b"\x7fELF", b"\x1f\x8b", b"BZh", b"\xfd7zXZ", b"Rar!", b"7z\xbc\xaf", b"\x00asm",
                 b"SQLite format 3", b"OggS", b"fLaC", b"RIFF", b"\x28\xb5\x2f\xfd")

# names that say "binary" whatever the bytes look like: never sniffed as text
BINARY_TYPES = frozenset({
    "exe", "dll", "so", "dylib", "bin", "o", "a", "obj", "lib", "class", "jar", "war", "pyc", "pyo", "wasm",
    "zip", "gz", "tgz", "bz2", "xz", "zst", "7z", "rar", "tar", "iso", "dmg", "img", "deb", "rpm", "apk",
    "msi", "mp3", "mp4", "m4a", "mov", "avi", "mkv", "webm", "wav", "flac", "ogg", "opus", "woff", "woff2",
    "ttf", "otf", "eot", "db", "sqlite", "sqlite3", "pkl", "pickle", "npy", "npz", "parquet", "onnx", "pt",
    "safetensors", "ico", "psd", "ai", "sketch", "fig",
})


def file_type(name: str) -> str:
    """``"report.PDF"`` → ``"pdf"``, ``"src/Makefile"`` → ``"mk"``, ``"README"`` → ``""``."""
    base = PurePosixPath(name.replace("\\", "/")).name
    suffix = PurePosixPath(base).suffix
    if suffix:
        return suffix[1:].lower()
    return NAMED_FILES.get(base.lower(), "")


def looks_binary(data: bytes) -> bool:
    """A known binary format's signature, NUL bytes (outside a UTF-16 BOM'd file) or many control characters
    in the first 64 KiB."""
    sample = data[:SNIFF_BYTES]
    if sample.startswith((b"\xff\xfe", b"\xfe\xff")):
        return False
    if sample.startswith(_BINARY_MAGIC) or b"\x00" in sample:
        return True
    controls = sum(1 for b in sample if b < 32 and b not in (9, 10, 12, 13, 27))
    return controls > _MAX_CONTROL_SHARE * max(len(sample), 1)


def content_type(name: str, head: bytes, supported: Collection[str]) -> str:
    """The type a file is parsed as: its name's type when ``supported`` has it, else plain text when its first
    bytes (``head``, at least ``SNIFF_BYTES`` of them when the file is longer) are text and its name is not a
    binary format's, else its name's type (which the caller refuses as unsupported, naming it)."""
    named = file_type(name)
    if named in supported or named in BINARY_TYPES or TEXT_TYPE not in supported:
        return named
    if head.strip() and not looks_binary(head):
        return TEXT_TYPE
    return named
