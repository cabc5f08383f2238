"""What ``knora ingest`` shows while it runs, on stderr: the refused paths before anything is sent, then one
line per finished document (its name, chunks, size) and, on a terminal, a progress line below them with the
documents being processed, the throughput and the time remaining. Not on a terminal (a log, a pipe) the same
facts come as plain lines, one per document, plus a status line every ``HEARTBEAT_S`` while nothing finishes.

Throughput and the estimate count bytes of finished documents (a document's work grows with its size; a URL
counts as one byte: its size is not known beforehand), measured from the first upload.
"""

from __future__ import annotations

import time
from typing import IO, Any

from rich.console import Console
from rich.filesize import decimal
from rich.markup import escape

HEARTBEAT_S = 30.0
_NAMES_SHOWN = 2
_NAME_WIDTH = 36


def _remaining(seconds: float) -> str:
    seconds = int(seconds + 0.5)
    if seconds >= 3600:
        return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"
    if seconds >= 60:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds} s"


class IngestProgress:
    def __init__(self, stream: IO[str], *, files: int, total_bytes: int, quiet: bool = False) -> None:
        self.stream = stream
        self.quiet = quiet
        self.files = files
        self.total = max(total_bytes, 1)
        self.done_files = 0
        self.done_bytes = 0
        self.started = time.monotonic()
        self._last_line = self.started
        self._active: list[str] = []
        self.console = Console(file=stream)
        self._bar: Any = None
        self._task: Any = None
        if not quiet and self.console.is_terminal and files:
            from rich import progress as bar
            from rich.table import Column

            names = Column(width=_NAME_WIDTH, no_wrap=True)
            self._bar = bar.Progress(bar.TextColumn("{task.description}", table_column=names),
                                     bar.BarColumn(), bar.TextColumn("{task.fields[count]}"),
                                     bar.TransferSpeedColumn(), bar.TimeRemainingColumn(),
                                     console=self.console, transient=True)
            self._task = self._bar.add_task("starting", total=self.total, count=f"0/{files}")
            self._bar.start()

    # --- before anything is sent ----------------------------------------------------------------------------
    def refused(self, entries: list[dict[str, Any]]) -> None:
        if self.quiet or not entries:
            return
        self._say(f"skipping {len(entries)} path{'s' * (len(entries) != 1)}:")
        for e in entries:
            self._say(f"  {e['source']}: {e['error']}")

    def begin(self, kb_name: str, created: bool) -> None:
        if self.quiet:
            return
        made = " (created)" if created else ""
        self._say(f"ingesting {self.files} item{'s' * (self.files != 1)} ({decimal(self.total)}) into "
                  f"{kb_name!r}{made}")

    # --- while it runs --------------------------------------------------------------------------------------
    def active(self, names: list[str]) -> None:
        """The documents being sent or processed now."""
        self._active = names
        if self._bar is not None:
            shown = ", ".join(names[:_NAMES_SHOWN]) + (f" +{len(names) - _NAMES_SHOWN}"
                                                        if len(names) > _NAMES_SHOWN else "")
            self._bar.update(self._task, description=escape(shown[:_NAME_WIDTH] or "queued on the server"))
        elif not self.quiet and time.monotonic() - self._last_line >= HEARTBEAT_S:
            self._say(f"… {self.done_files}/{self.files} done{self._rates()}; working on "
                      f"{', '.join(names[:_NAMES_SHOWN]) or 'nothing'}")

    def finished(self, entry: dict[str, Any], size: int) -> None:
        self.done_files += 1
        self.done_bytes += size
        if self._bar is not None:
            self._bar.update(self._task, completed=self.done_bytes, count=f"{self.done_files}/{self.files}")
        if self.quiet:
            return
        status = entry["status"]
        chunks = int(entry.get("chunks", 0))
        detail = (f"{chunks} chunk{'s' * (chunks != 1)}, {decimal(size)}" if status == "completed"
                  else entry.get("error") or status)
        line = f"[{self.done_files}/{self.files}] {status} {entry['source']} — {detail}"
        self._say(line if self._bar is not None else line + self._rates())

    def waiting(self, seconds: float) -> None:
        """The server asked to slow down (429): said once per wait longer than a second."""
        if seconds >= 1 and not self.quiet:
            self._say(f"… the server's rate limit: waiting {seconds:.0f} s")

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None

    # --- internals ------------------------------------------------------------------------------------------
    def _rates(self) -> str:
        elapsed = time.monotonic() - self.started
        if elapsed <= 0 or not self.done_bytes:
            return ""
        rate = self.done_bytes / elapsed
        left = max(self.total - self.done_bytes, 0) / rate
        eta = f", about {_remaining(left)} left" if self.done_files < self.files else ""
        return f" · {decimal(int(rate))}/s, {self.done_files / elapsed:.2f} files/s{eta}"

    def _say(self, text: str) -> None:
        self._last_line = time.monotonic()
        if self._bar is not None:
            self.console.print(escape(text), highlight=False, soft_wrap=True)
        else:
            self.stream.write(text + "\n")
            self.stream.flush()
