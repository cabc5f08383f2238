"""Ingestion's embedding in a process of its own, so that chat keeps the interpreter as well as the CPU.

The thread lane (``lanes.BackgroundLane``) lowers the embedding thread's priority, but the thread still shares
the server's interpreter lock: tokenising, padding and unpacking each batch is Python work, and a thread the
kernel deprioritises can be switched out *while holding the lock* — then the event loop waits for the lowest-
priority thread on the machine (a priority inversion; issue 18 measured chat's first-token p95 at 2.6× idle
during a 50 MB ingest with the thread lane). This lane runs the same work in one worker process instead,
started on first use with ``spawn`` (the server has threads: a forked child could inherit a held lock) and
niced as a whole, model runtime threads included. The server's side of a batch is a pickle of its texts and
of the resulting matrix (``32 × 384`` float32 = 48 kB), sent and received by one dispatcher thread that
blocks in the pipe with the lock released.

The worker loads each model once (``_base.embed_on_lane`` keeps it by the twin's key) and exits when the pipe
closes, so a server killed with ``kill -9`` does not leave it behind. A worker that dies (killed, out of
memory) fails the batch it held with :class:`EmbeddingWorkerLost` (the job retries) and is replaced by a new
one at the next batch. Shutting down kills the worker at once: a batch in flight is dropped and its job
resumes at the next start, as with the thread lane."""

from __future__ import annotations

import logging
import multiprocessing
import pickle
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any, ParamSpec, TypeVar

from knora.adapters.embedders.lanes import BACKGROUND_NICE, lower_priority

log = logging.getLogger(__name__)

P = ParamSpec("P")
T = TypeVar("T")

_Call = tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]


class EmbeddingWorkerLost(RuntimeError):
    """The embedding worker process exited while it held a batch."""


def _serve(conn: Connection, nice: int) -> None:
    """The worker's loop: one call at a time, until the server closes the pipe."""
    lower_priority(nice)
    while True:
        try:
            fn, args, kwargs = conn.recv()
        except (EOFError, OSError):
            return  # the server closed the pipe or died
        try:
            reply: tuple[bool, object] = (True, fn(*args, **kwargs))
        except BaseException as exc:  # noqa: BLE001 - the caller's future carries it
            reply = (False, exc)
        try:
            conn.send(reply)
        except (pickle.PicklingError, TypeError, AttributeError) as exc:  # an exception that cannot travel
            conn.send((False, RuntimeError(f"{type(reply[1]).__name__}: {reply[1]} ({exc})")))


class ProcessLane(Executor):
    """An executor of one niced worker process, started on first use; ``fn`` and its arguments must pickle
    (module-level functions, plain data). Calls run one at a time, in order."""

    def __init__(self, nice: int = BACKGROUND_NICE, name: str = "knora-embed-worker") -> None:
        self._nice = nice
        self._name = name
        self._work: queue.SimpleQueue[tuple[Future[Any], _Call] | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._dispatcher: threading.Thread | None = None
        self._process: BaseProcess | None = None
        self._conn: Connection | None = None
        self._closed = False

    @property
    def pid(self) -> int | None:
        """The worker's process id while one runs (tests read its priority)."""
        process = self._process
        return process.pid if process is not None and process.is_alive() else None

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        fut: Future[T] = Future()
        with self._lock:
            if self._closed:
                raise RuntimeError("the embedding worker is shut down")
            self._work.put((fut, (fn, args, dict(kwargs))))
            if self._dispatcher is None:
                self._dispatcher = threading.Thread(target=self._dispatch, name=f"{self._name}-io",
                                                    daemon=True)
                self._dispatcher.start()
        return fut

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Kills the worker (a batch in flight is lost: its job resumes); calls still queued are cancelled."""
        with self._lock:
            self._closed = True
            self._work.put(None)
            process = self._process
        if process is not None and process.is_alive():
            process.kill()  # the dispatcher, if it waits on a batch, gets EOF and cleans up
        dispatcher = self._dispatcher
        if dispatcher is None:
            self._stop_worker()
        if wait and dispatcher is not None and dispatcher is not threading.current_thread():
            dispatcher.join(10)

    async def aclose(self) -> None:
        self.shutdown(wait=False)

    # --- the dispatcher thread ---------------------------------------------------------------------------

    def _dispatch(self) -> None:
        while True:
            item = self._work.get()
            if item is None or self._closed:
                self._drain(item)
                self._stop_worker()
                return
            fut, call = item
            if not fut.set_running_or_notify_cancel():
                continue
            try:
                ok, value = self._round_trip(call)
            except BaseException as exc:  # noqa: BLE001 - the caller's future carries it
                fut.set_exception(exc)
                continue
            if ok:
                fut.set_result(value)
            else:
                fut.set_exception(value if isinstance(value, BaseException) else RuntimeError(str(value)))

    def _drain(self, item: tuple[Future[Any], _Call] | None) -> None:
        """After shutdown: every call still waiting is cancelled, so no caller waits forever."""
        while item is not None or not self._work.empty():
            if item is not None:
                item[0].cancel()
            try:
                item = self._work.get_nowait()
            except queue.Empty:
                return

    def _round_trip(self, call: _Call) -> tuple[bool, object]:
        if self._closed:
            raise EmbeddingWorkerLost("the embedding worker was stopped (shutting down)")
        conn = self._worker()
        try:
            conn.send(call)
            reply: tuple[bool, object] = conn.recv()
        except (EOFError, OSError, BrokenPipeError) as exc:
            code = self._process.exitcode if self._process is not None else None
            self._stop_worker()
            if self._closed:
                raise EmbeddingWorkerLost("the embedding worker was stopped (shutting down)") from exc
            log.warning("the embedding worker exited (exit code %s) during a batch; starting another", code)
            raise EmbeddingWorkerLost(f"the embedding worker exited during the batch (exit code {code})") \
                from exc
        return reply

    def _worker(self) -> Connection:
        if self._conn is not None and self._process is not None and self._process.is_alive():
            return self._conn
        self._stop_worker()
        context = multiprocessing.get_context("spawn")
        parent, child = context.Pipe()
        process = context.Process(target=_serve, args=(child, self._nice), name=self._name, daemon=True)
        process.start()
        child.close()  # the worker's end lives in the worker only: its exit closes the pipe here
        self._process, self._conn = process, parent
        return parent

    def _stop_worker(self) -> None:
        """Ends the worker and closes the pipe: the dispatcher's (or, with no dispatcher, shutdown's) job."""
        process, conn = self._process, self._conn
        self._process, self._conn = None, None
        if conn is not None:
            conn.close()
        if process is not None:
            if process.is_alive():
                process.kill()
            process.join(5)
