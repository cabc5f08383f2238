"""Parse functions that misbehave, run inside a real worker process by ``ProcessParsers(entry=...)``."""

from __future__ import annotations

import os
import signal
import time

from knora.ports.parser import ParsedDocument, ParseOptions


def spin(data: bytes, file_name: str, max_expanded_bytes: int, options: ParseOptions) -> ParsedDocument:
    while True:  # a parser stuck on a file, burning a core
        time.sleep(0.01)


def hoard(data: bytes, file_name: str, max_expanded_bytes: int, options: ParseOptions) -> ParsedDocument:
    kept = []
    while True:  # a parser building an ever larger structure
        kept.append(bytearray(16 * 1024 * 1024))


def crash(data: bytes, file_name: str, max_expanded_bytes: int, options: ParseOptions) -> ParsedDocument:
    os.kill(os.getpid(), signal.SIGSEGV)  # a C extension dying under the parse
    raise AssertionError("unreachable")


def echo(data: bytes, file_name: str, max_expanded_bytes: int, options: ParseOptions) -> ParsedDocument:
    return ParsedDocument(title=file_name, text=f"{data.decode()} (pid {os.getpid()})")


def options(data: bytes, file_name: str, max_expanded_bytes: int, options: ParseOptions) -> ParsedDocument:
    return ParsedDocument(title=file_name, text=options.model_dump_json())
