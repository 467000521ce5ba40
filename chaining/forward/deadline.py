"""Stop pure-Python work at a deadline, even inside one long call (experta's matcher).

experta builds its Rete network and propagates each declared fact in plain Python; one such
call can take seconds (an OR field constraint per pattern multiplies the network), so checking
the clock between firings stops a runaway only after the call returns. `call_with_deadline`
runs the work in the calling thread and, at the deadline, a timer thread asks CPython to raise
`DeadlineExceeded` in it (`PyThreadState_SetAsyncExc`, the C API behind interrupting a thread):
the work stops at its next bytecode, within milliseconds. The interrupted work may leave its
objects half-updated: callers drop them (`ExpertaEngine` builds a new `KnowledgeEngine`).
Work that is blocked inside C code is interrupted only when it returns to Python.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

_set_async_exc = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_ulong, ctypes.py_object)(
    ("PyThreadState_SetAsyncExc", ctypes.pythonapi)
)
# the same function with NULL for the exception: drops one not yet raised
_clear_async_exc = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p)(
    ("PyThreadState_SetAsyncExc", ctypes.pythonapi)
)


class DeadlineExceeded(BaseException):
    """Raised inside work that ran past its deadline (a BaseException: `except Exception` in a
    rule's right-hand side must not swallow it)."""


class _Shot:
    """One armed deadline: from the deadline on, it raises `DeadlineExceeded` in the work's thread
    again every `RETRY_S` until the work has finished (the work may swallow one in a bare `except:`,
    as experta's and schema's code can), and never after the work finished."""

    RETRY_S = 0.05

    def __init__(self, thread_id: int, seconds: float):
        self.thread_id = thread_id
        self.seconds = seconds
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.fired = False
        self.thread = threading.Thread(target=self._run, name="deadline", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def _run(self) -> None:
        wait = self.seconds
        while not self.done.wait(wait):
            with self.lock:
                if self.done.is_set():
                    return
                self.fired = True
                _set_async_exc(self.thread_id, DeadlineExceeded)
            wait = self.RETRY_S

    def finish(self) -> bool:
        """Mark the work finished; True when the deadline passed (an exception was sent)."""
        with self.lock:
            self.done.set()
            if self.fired:
                _clear_async_exc(self.thread_id, None)
            return self.fired


def call_with_deadline(work: Callable[[], T], seconds: float | None) -> T:
    """`work()`, stopped with `DeadlineExceeded` when it runs longer than `seconds` (None: no limit).

    Raises:
        DeadlineExceeded: the work ran past the deadline (raised from inside it, or after it
            returned when the work swallowed every exception sent to it).
    """
    if seconds is None:
        return work()
    shot = _Shot(threading.get_ident(), max(0.0, seconds))
    shot.start()
    try:
        result = work()
    finally:  # (if the exception lands in here, the work did run past its deadline)
        fired = shot.finish()
    if fired:
        raise DeadlineExceeded
    return result
