"""Time limits that interrupt CLIPS inside a right-hand side, a test or a deffacts expression.

Checking the clock between batches of firings cannot stop one right-hand side that never
returns (`(while TRUE do ...)`, an endless `loop-for-count`), nor an endless expression in a
`test` pattern or a deffacts/defglobal initialiser that runs during `Reset`. CLIPS's own answer
is its halt flags: `SetHaltExecution(env, true)` makes every loop and function call return
(CLIPS 6.4 prints `[PRCCODE4] Execution halted during the actions of ...`) and
`SetHaltRules(env, true)` makes `Run` stop after the current rule. clipspy 1.0.6 does not
declare these functions, but its extension module exports them (bound in `clips_native`).
One watchdog thread sets the flags of every evaluation that is past its deadline or whose
environment holds more memory than its limit (a `str-cat` that doubles a string each
iteration); the evaluating thread clears them afterwards, so the environment stays usable.

The flags are plain `bool` fields that CLIPS reads at every loop iteration and function call;
setting one from another thread is how CLIPS's own interactive interrupt (Ctrl-C) works.
"""

from __future__ import annotations

import math
import os
import threading
import time
from typing import Any

from clips._clips import ffi

from . import clips_native as native

POLL_SECONDS = 0.02  # how late past its deadline an evaluation may be interrupted, at most
IDLE_SECONDS = 1.0  # the thread stops polling after this long with nothing armed


def _address(env: Any) -> int:
    return int(ffi.cast("uintptr_t", env))


def halt(env: Any) -> None:
    """Ask CLIPS to stop: abandon the current evaluation and fire no further rule."""
    e = native.env_pointer(env)
    native.lib.SetHaltExecution(e, True)
    native.lib.SetHaltRules(e, True)


def clear(env: Any) -> None:
    """Reset the halt and error flags so that the environment evaluates normally again."""
    e = native.env_pointer(env)
    native.lib.SetHaltExecution(e, False)
    native.lib.SetHaltRules(e, False)
    native.lib.SetEvaluationError(e, False)


class Watchdog:
    """Halts CLIPS environments that run past their deadline (`time.perf_counter()` seconds) or
    past their memory limit (bytes CLIPS has allocated, `MemUsed`).

    `arm(env, deadline)` before the work, `disarm(env)` after it (always, e.g. in `finally`);
    `disarm` returns why the environment was halted ("timeout", "memory", or the reason given to
    `stop`), or "" when it was not, and clears its flags. An environment is never halted after its `disarm` returned.
    Thread-safe; one daemon thread, started again in a child process after `os.fork` (threads do
    not survive a fork, and the parent's lock may have been held at that moment).
    """

    def __init__(self) -> None:
        self._reinit()

    def _reinit(self) -> None:
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._armed: dict[int, tuple[Any, float, int | None]] = {}
        self._halted: dict[int, str] = {}
        self._paused: dict[int, float] = {}  # key -> seconds left when its clock was paused
        self._thread: threading.Thread | None = None
        self._sleeping = False  # the thread waits for a notify (nothing armed for IDLE_SECONDS)

    def arm(self, env: Any, deadline: float, key: int | None = None, memory_limit: int | None = None) -> None:
        """`key`: `env`'s address when the caller has it (saves a cast per evaluation);
        `deadline`: `math.inf` for none; `memory_limit`: bytes, None for none."""
        key = _address(env) if key is None else key
        with self._lock:
            self._armed[key] = (env, deadline, memory_limit)
            self._halted.pop(key, None)
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="clips-watchdog", daemon=True)
                self._thread.start()
            if self._sleeping:  # notify only then: waking the thread at every evaluation costs GIL switches
                self._sleeping = False
                self._wake.notify()

    def pause(self, key: int) -> None:
        """Stop an armed environment's clock (it waits for console input); `resume` restarts it."""
        with self._lock:
            armed = self._armed.get(key)
            if armed is not None and key not in self._paused:
                self._paused[key] = armed[1] - time.perf_counter()
                self._armed[key] = (armed[0], math.inf, armed[2])

    def resume(self, key: int) -> None:
        """Restart a paused clock with the time that was left when it was paused."""
        with self._lock:
            left = self._paused.pop(key, None)
            armed = self._armed.get(key)
            if left is not None and armed is not None:
                self._armed[key] = (armed[0], time.perf_counter() + left, armed[2])

    def stop(self, key: int, reason: str = "cancelled") -> None:
        """Halt the armed environment `key` now (its `disarm` then returns `reason`); nothing when it is not
        armed or already halted. How a `cancellation.Cancellation` stops an evaluation."""
        with self._lock:
            armed = self._armed.get(key)
            if armed is None or key in self._halted:
                return
            halt(armed[0])
            self._halted[key] = reason

    def disarm(self, env: Any, key: int | None = None) -> str:
        key = _address(env) if key is None else key
        with self._lock:
            self._armed.pop(key, None)
            self._paused.pop(key, None)
            reason = self._halted.pop(key, "")
        if reason:
            clear(env)
        return reason

    def _loop(self) -> None:  # pragma: no cover - exercised through ClipsRunner's timeout tests
        last_busy = time.perf_counter()
        mem_used = native.lib.MemUsed
        with self._lock:
            while True:
                now = time.perf_counter()
                if self._armed:
                    last_busy = now
                elif now - last_busy > IDLE_SECONDS:
                    self._sleeping = True
                    while self._sleeping:
                        self._wake.wait()
                    last_busy = now = time.perf_counter()
                for key, (env, deadline, memory_limit) in list(self._armed.items()):
                    if key in self._halted:
                        continue
                    if now > deadline:
                        reason = "timeout"
                    elif memory_limit is not None and mem_used(native.env_pointer(env)) > memory_limit:
                        reason = "memory"
                    else:
                        continue
                    halt(env)
                    self._halted[key] = reason
                self._wake.wait(POLL_SECONDS)


WATCHDOG = Watchdog()
os.register_at_fork(after_in_child=WATCHDOG._reinit)
