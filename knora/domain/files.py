"""A file's type as the parser registry keys it: its extension (lower case, no dot), or, for the
extension-less files every repository has (``Dockerfile``, ``Makefile``, ``Gemfile`` …), the type of what
they hold. Ingestion, the CLI's folder walk and the parser registry all ask here, so they agree."""

from __future__ import annotations

from pathlib import PurePosixPath

# base name (lower case) → the type it is parsed as
NAMED_FILES: dict[str, str] = {
    "dockerfile": "dockerfile", "containerfile": "dockerfile", "makefile": "mk", "gnumakefile": "mk",
    "jenkinsfile": "groovy", "gemfile": "rb", "rakefile": "rb", "vagrantfile": "rb", "podfile": "rb",
    "brewfile": "rb",
}


def file_type(name: str) -> str:
    """``"report.PDF"`` → ``"pdf"``, ``"src/Makefile"`` → ``"mk"``, ``"README"`` → ``""``."""
    base = PurePosixPath(name.replace("\\", "/")).name
    suffix = PurePosixPath(base).suffix
    if suffix:
        return suffix[1:].lower()
    return NAMED_FILES.get(base.lower(), "")
