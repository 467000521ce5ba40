"""Stopping a CLIPS evaluation from another thread: what a server does when the client that asked for a
run goes away (`POST /v1/kb/NAME/run`), instead of letting a runaway program run to its time limit.

The caller makes a `Cancellation`, passes it to `ForwardEngine.evaluate(..., cancel=c)` (running in a
worker thread) and calls `c.cancel()` from anywhere. The evaluation binds a stop function while it runs
(the watchdog halts its environment, as a time limit does: `clips_halt`) and unbinds it before it lets
the environment go, so a late `cancel()` never halts the next evaluation of the same environment.
"""

from __future__ import annotations

import threading
from collections.abc import Callable


class Cancellation:
    """A one-shot stop request for one evaluation. Thread-safe; `cancel()` is idempotent."""

    __slots__ = ("_lock", "_stop", "cancelled")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stop: Callable[[], None] | None = None
        self.cancelled = False

    def cancel(self) -> None:
        """Stop the evaluation now (within one CLIPS loop iteration or function call), or, when it has
        not started yet, before it starts."""
        with self._lock:  # held while stopping: `unbind` waits for it, so the stop never outlives the run
            self.cancelled = True
            if self._stop is not None:
                self._stop()

    def bind(self, stop: Callable[[], None]) -> None:
        """Called by the evaluation once its stop function works (its environment is armed); a request
        made before is carried out at once."""
        with self._lock:
            self._stop = stop
            if self.cancelled:
                stop()

    def unbind(self) -> None:
        """Called by the evaluation before it lets its environment go."""
        with self._lock:
            self._stop = None
