"""A low-priority thread lane for ingestion's embedding work (``KNORA_EMBED_ISOLATION=thread``; the default is
the worker process of ``process_lane``, which also keeps the embedding's Python work off the server's
interpreter lock).

Embedding a large upload keeps every core busy for minutes. If that work ran at the same priority as a user's
query embedding, the query would wait for a share of the CPU (and, on one model instance, for the running
batch). Ingestion therefore embeds on its own model instance (``LocalEmbedder.background_copy``), called from
one thread whose scheduling priority is lowered (``nice`` 10 on Linux, where a thread has its own). Thread
pools the model's runtime creates from that thread (OpenMP, ONNX Runtime) inherit its priority, so the whole
background computation yields to chat at once; when nothing else runs it still has every core.

The thread is a daemon: shutting down never waits for a batch to finish (the interrupted job resumes at the
next start)."""

from __future__ import annotations

import logging
import os
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any, ParamSpec, TypeVar

log = logging.getLogger(__name__)

P = ParamSpec("P")
T = TypeVar("T")

BACKGROUND_NICE = 10  # Linux CFS weight ~110 against 1024 at nice 0: chat gets ~90 % of a contended core


class BackgroundLane(Executor):
    """An executor of one daemon thread at lowered priority, started on first use."""

    def __init__(self, nice: int = BACKGROUND_NICE, name: str = "knora-embed-bg") -> None:
        self._nice = nice
        self._name = name
        self._work: queue.SimpleQueue[tuple[Future[Any], Callable[[], Any]] | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self._closed = False
        self.native_id: int | None = None  # the thread's id once started (tests read its priority)

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        if self._closed:
            raise RuntimeError("the background lane is shut down")
        fut: Future[T] = Future()
        self._work.put((fut, lambda: fn(*args, **kwargs)))
        self._ensure_thread()
        return fut

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self._closed = True
        self._work.put(None)
        if wait and self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()

    def _ensure_thread(self) -> None:
        with self._start_lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()

    def _run(self) -> None:
        self.native_id = threading.get_native_id()
        lower_priority(self._nice)
        while True:
            item = self._work.get()
            if item is None:
                return
            fut, call = item
            if not fut.set_running_or_notify_cancel():
                continue
            try:
                fut.set_result(call())
            except BaseException as exc:  # noqa: BLE001 - the caller's future carries it
                fut.set_exception(exc)


def lower_priority(nice: int) -> None:
    """Lowers the calling thread's priority by ``nice`` (Linux: per thread; elsewhere: not done)."""
    if nice <= 0 or not hasattr(os, "setpriority"):
        return
    try:
        tid = threading.get_native_id()
        current = os.getpriority(os.PRIO_PROCESS, tid)
        os.setpriority(os.PRIO_PROCESS, tid, min(19, current + nice))
    except OSError as exc:  # a sandbox may forbid it: the lane still works, at normal priority
        log.info("could not lower the embedding thread's priority: %s", exc)


def thread_nice(native_id: int) -> int:
    """A thread's nice value (Linux)."""
    return os.getpriority(os.PRIO_PROCESS, native_id)
