"""The call-depth limit of `kb run` (`clips_recursion`) for the interactive shell (`clips_shell`).

CLIPS has no recursion limit: `(deffunction rec (?n) (rec (+ ?n 1)))` then `(rec 0)` at the
shell overflowed the C stack and killed the process (SIGSEGV, exit 139). As in `kb run`, only
deffunctions, generic functions and message-handlers on a cycle of the static call graph of what
was defined so far are watched (`recursive_functions`, `watch_if_recursive`); their call-trace
lines (`DFN >> rec ED:12 ...`) go to a router placed above CLIPS's terminal router, which feeds
them to a `CallDepthGuard` and drops them; every other piece of output is passed on to the
terminal router unchanged and at once. Past the limit CLIPS is halted, the shell prints
`[WORKBENCH5]` on stderr (with the first of CLIPS's `[PRCCODE4]` warnings, one per call
level) and the session goes on. Until something recursive is defined the
router claims nothing, so output costs what it did.

Limit: a `(watch deffunctions)` / `(watch generic-functions)` / `(watch message-handlers)` of
the user's own shows no lines for the watched recursive functions (those lines are the guard's).
"""

from __future__ import annotations

from typing import Any

import clips

from . import clips_native as native
from .clips_recursion import (
    DEFAULT_MAX_CALL_DEPTH,
    CallDepthGuard,
    call_trace_end,
    depth_message,
    recursive_functions,
    watch_if_recursive,
)
from .constructs import ConstructSyntaxError, split_constructs

_KINDS = ("deffunction", "defgeneric", "defmethod", "defmessage-handler")
_TRACE_STARTS = ("DFN ", "GNC ", "HND ")


class ShellCallGuard(clips.Router):
    """Router and bookkeeping of the shell's call-depth limit (see the module docstring).

    Args:
        env: the shell's clipspy `Environment`.
        limit: deepest call depth allowed (CLIPS's evaluation depth, as `kb run`).
    """

    def __init__(self, env: Any, limit: int = DEFAULT_MAX_CALL_DEPTH):
        super().__init__("workbench-shell-depth", 45)
        self._environment = env
        self._ep = native.env_pointer(env._env)
        self.guard = CallDepthGuard(limit)
        self._sources: list[tuple[str, str]] = []
        self._watched: set[str] = set()
        self._line: list[str] = []  # pieces of a line that may be a call trace, held until its end
        self._halted: list[str] = []  # pieces of a warning line printed while halting past the limit
        self._dropped = 0  # [PRCCODE4] lines of the halt left out
        self._active = False
        env.add_router(self)

    # -- what was defined ------------------------------------------------------------------
    def defined(self, text: bytes | str, origin: str = "<shell>") -> None:
        """Note constructs executed or loaded (`text`: a command or a file's text); when they define
        functions or handlers, watch every one that may now recurse."""
        data = text.decode(errors="replace") if isinstance(text, bytes) else text
        if not any(k in data for k in _KINDS):
            return
        self._sources.append((origin, data))
        recursive = recursive_functions(self._sources)
        if not recursive or set(recursive) <= self._watched:
            return
        for file, source in self._sources:
            try:
                constructs = split_constructs(source, file)
            except ConstructSyntaxError:
                continue
            for c in constructs:
                watch_if_recursive(self._environment._env, c.text, recursive)
        self._watched |= set(recursive)
        self._active = True

    # -- after a command -------------------------------------------------------------------
    def tripped_message(self) -> str | None:
        """The error to print when the last command passed the limit (and reset for the next one)."""
        self._flush()
        if self.guard.tripped is None:
            return None
        message = depth_message(self.guard)
        self.guard.tripped = None
        if self._halted:
            self._pass_on("".join(self._halted), "stderr")
            self._halted = []
        left_out = self._dropped - 1
        self._dropped = 0
        more = f" ({left_out} more [PRCCODE4] lines, one per call level, left out)" if left_out > 0 else ""
        return f"[WORKBENCH5] Halted: {message}{more}.\n"

    # -- router ----------------------------------------------------------------------------
    def query(self, name: str) -> bool:
        if name == "stdout":
            return self._active
        return self.guard.tripped is not None and name in ("stderr", "stdwrn")

    def write(self, name: str, message: str) -> None:
        if name != "stdout":  # halted past the limit: one [PRCCODE4] per call level is kept to one line
            self._halted.append(message)
            if message.endswith("\n"):
                line, self._halted = "".join(self._halted), []
                if line.startswith("[PRCCODE4]"):
                    self._dropped += 1
                    if self._dropped > 1:
                        return
                self._pass_on(line, name)
            return
        self.guard(self._environment._env, message)
        if self._line or message in _TRACE_STARTS:
            self._line.append(message)
            if message.endswith("\n"):
                self._flush()
            return
        self._pass_on(message)

    def _flush(self) -> None:
        pieces, self._line = self._line, []
        if pieces and call_trace_end(pieces, 0) < 0:
            self._pass_on("".join(pieces))

    def _pass_on(self, text: str, name: str = "stdout") -> None:
        lib = native.lib
        lib.DeactivateRouter(self._ep, b"workbench-shell-depth")
        try:
            lib.WriteString(self._ep, name.encode(), text.encode())
        finally:
            lib.ActivateRouter(self._ep, b"workbench-shell-depth")
