"""Time limits that interrupt CLIPS inside a right-hand side, a test or a deffacts expression.

Checking the clock between batches of firings cannot stop one right-hand side that never
returns (`(while TRUE do ...)`, an endless `loop-for-count`), nor an endless expression in a
`test` pattern or a deffacts/defglobal initialiser that runs during `Reset`. CLIPS's own answer
is its halt flags: `SetHaltExecution(env, true)` makes every loop and function call return
(CLIPS 6.4 prints `[PRCCODE4] Execution halted during the actions of ...`) and
`SetHaltRules(env, true)` makes `Run` stop after the current rule. clipspy 1.0.6 does not
declare these functions, but its extension module exports them (bound in `clips_native`). One
watchdog thread sets the flags of every evaluation that is past its deadline; the evaluating
thread clears them afterwards, so the environment stays usable.

The flags are plain `bool` fields that CLIPS reads at every loop iteration and function call;
setting one from another thread is how CLIPS's own interactive interrupt (Ctrl-C) works.
"""

from __future__ import annotations

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
    """Halts CLIPS environments that run past their deadline (`time.perf_counter()` seconds).

    `arm(env, deadline)` before the work, `disarm(env)` after it (always, e.g. in `finally`);
    `disarm` returns True when the environment was halted, and then clears its flags. An
    environment is never halted after its `disarm` returned. Thread-safe; one daemon thread.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._armed: dict[int, tuple[Any, float]] = {}
        self._halted: set[int] = set()
        self._thread: threading.Thread | None = None
        self._sleeping = False  # the thread waits for a notify (nothing armed for IDLE_SECONDS)

    def arm(self, env: Any, deadline: float, key: int | None = None) -> None:
        """`key`: `env`'s address when the caller has it (saves a cast per evaluation)."""
        key = _address(env) if key is None else key
        with self._lock:
            self._armed[key] = (env, deadline)
            self._halted.discard(key)
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="clips-watchdog", daemon=True)
                self._thread.start()
            if self._sleeping:  # notify only then: waking the thread at every evaluation costs GIL switches
                self._sleeping = False
                self._wake.notify()

    def disarm(self, env: Any, key: int | None = None) -> bool:
        key = _address(env) if key is None else key
        with self._lock:
            self._armed.pop(key, None)
            halted = key in self._halted
            self._halted.discard(key)
        if halted:
            clear(env)
        return halted

    def _loop(self) -> None:  # pragma: no cover - exercised through ClipsRunner's timeout tests
        last_busy = time.perf_counter()
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
                for key, (env, deadline) in list(self._armed.items()):
                    if now > deadline and key not in self._halted:
                        halt(env)
                        self._halted.add(key)
                self._wake.wait(POLL_SECONDS)


WATCHDOG = Watchdog()
