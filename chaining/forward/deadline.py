"""Stop pure-Python work at a deadline, even inside one long call (experta's matcher).

experta builds its Rete network and propagates each declared fact in plain Python; one such
call can take seconds (an OR field constraint per pattern multiplies the network), so checking
the clock between firings stops a runaway only after the call returns. `call_with_deadline`
runs the work in a worker thread and, at the deadline, the waiting caller asks CPython to raise
`DeadlineExceeded` in it (`PyThreadState_SetAsyncExc`, the C API behind interrupting a thread):
the work stops at its next bytecode, within milliseconds. The work runs in a thread of its own,
so that no exception sent at the deadline can reach the caller's thread after the work ended.
The interrupted work may leave its objects half-updated: callers drop them (`ExpertaEngine`
builds a new `KnowledgeEngine`).
Work that is blocked inside C code is interrupted only when it returns to Python.
"""

from __future__ import annotations

import contextvars
import ctypes
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

RETRY_S = 0.05
"""Seconds between two exceptions sent to work past its deadline."""

_set_async_exc = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_ulong, ctypes.py_object)(
    ("PyThreadState_SetAsyncExc", ctypes.pythonapi)
)


class DeadlineExceeded(BaseException):
    """Raised inside work that ran past its deadline (a BaseException: `except Exception` in a
    rule's right-hand side must not swallow it)."""


class _Worker(threading.Thread):
    """Runs the work in its own thread, so that an exception sent at the deadline can only ever land
    in this throw-away thread, never in the caller's (one sent just as the work returned used to
    escape into whatever the caller ran next)."""

    def __init__(self, work: Callable[[], Any]):
        super().__init__(name="deadline-work", daemon=True)
        self.work = work
        self.context = contextvars.copy_context()
        self.lock = threading.Lock()
        self.finished = False
        self.result: Any = None
        self.error: BaseException | None = None

    def run(self) -> None:
        # every DeadlineExceeded that arrives after the work ended is swallowed here (the caller has
        # stopped sending by then, at most one more can be pending)
        for _ in range(3):
            try:
                if not self.finished:
                    try:
                        self.result = self.context.run(self.work)
                    except BaseException as exc:  # handed to the caller
                        self.error = exc
                    with self.lock:
                        self.finished = True
                return
            except DeadlineExceeded:
                with self.lock:
                    self.finished = True
                if self.error is None:
                    self.error = DeadlineExceeded()


def call_with_deadline(work: Callable[[], T], seconds: float | None) -> T:
    """`work()`, stopped with `DeadlineExceeded` when it runs longer than `seconds` (None: no limit).

    With a limit the work runs in a throw-away thread (context variables copied) while the caller
    waits; from the deadline on, `DeadlineExceeded` is raised in that thread every 50 ms until the
    work ends (it may swallow one in a bare `except:`, as experta's and schema's code can).

    Raises:
        DeadlineExceeded: the work ran past the deadline (raised from inside it, or after it
            returned when the work swallowed every exception sent to it).
        BaseException: whatever the work raised.
    """
    if seconds is None:
        return work()
    worker = _Worker(work)
    worker.start()
    worker.join(max(0.0, seconds))
    fired = False
    while worker.is_alive():
        with worker.lock:
            if not worker.finished:
                fired = True
                _set_async_exc(worker.ident, DeadlineExceeded)
        worker.join(RETRY_S)
    if worker.error is not None:
        raise worker.error
    if fired:
        raise DeadlineExceeded
    return worker.result
