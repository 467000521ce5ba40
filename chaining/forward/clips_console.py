"""CLIPS's terminal input (logical name `stdin`): the process's standard input, or a clear refusal.

CLIPS programs ask questions with `(read)`, `(readline)`, `(read-number)` and `(get-char)`
(CLIPS's animal, wine and auto examples do); all of them read the logical name `stdin` one
character at a time through CLIPS's routers (`ReadRouter` / `UnreadRouter`, CLIPS 6.4 router.c).
CLIPS's own terminal router ("fileio") is off in the engine's environments (`clips_runner`), so
`stdin` reaches the router installed here:

- with a `Console` (`workbench kb run`, `workbench kb shell`): bytes of the console's input
  (a file descriptor, by default 0), `-1` (C's EOF) at its end, so CLIPS returns its `EOF`
  symbol exactly as the `clips` executable does with piped input; nothing is echoed. Before the
  first byte of each line is read, the program's pending output is written (prompts appear
  before the answer is awaited). Time spent waiting for input is not counted against the
  evaluation's time limit (`Console.waited`).
- without one (servers, pipelines): the read fails with a CLIPS error naming what happened,
  and the right-hand side is halted (`RuleExecutionError`), instead of blocking a server.

The router's callbacks are cffi callbacks bound on clipspy's own library (`clips_native`): clipspy
1.0.6 declares its unread callback with the logical name and the character swapped, so its
`Router.unread` never works.
"""

from __future__ import annotations

import codecs
import inspect
import os
import sys
import time
import weakref
from collections.abc import Callable
from typing import Any, BinaryIO, TextIO

from . import clips_native as native
from .clips_halt import WATCHDOG
from .clips_trace import printable

ROUTER_NAME = b"workbench-console"
# Below every other router of the engine's environments (CLIPS's string routers at 0, the output
# and message routers at -1 and -2): CLIPS asks routers in priority order for every piece it
# writes, also into its internal string builders, and this router's query is a Python call.
# Nothing above it claims `stdin` (CLIPS's terminal router is off), so reads still reach it.
ROUTER_PRIORITY = -3
_STDIN = b"stdin"
_EOF = -1
REFUSAL = (
    "[WORKBENCH1] This program reads the console (logical name stdin: read, readline, read-number "
    "or get-char), which is not available here; run it with `workbench kb run` or `workbench kb shell` "
    "and give the answers on standard input.\n"
)


class Console:
    """The terminal of a CLIPS program: where `stdin` reads from and where its output goes live.

    Args:
        input: a file descriptor (default 0, the process's standard input), a binary stream
            with `read(n)` (read in blocks, so a pipe's bytes are not read twice), or a callable
            taking no argument that returns the next piece of input as `str` or `bytes` (e.g. one
            typed line with its "\n"); "" / b"" / None is the end of input. The callable runs on
            the evaluating thread exactly when the program waits for input and may block there,
            e.g. `queue.Queue().get` fed by a UI (put None to end the input).
        output: where the program's `stdout` text goes as it is produced (flushed before each
            read of the console): a text stream (`write` + `flush`) or a callable taking the text;
            None: only recorded in `ForwardResult.output`.

    A front end (the TUI's console pane) drives a program with a queue::

        answers: queue.Queue[str | None] = queue.Queue()
        console = Console(input=answers.get, output=pane_write)   # pane_write(text) -> None
        # on the worker thread: ForwardEngine(kb, config=EngineConfig(console=console)).evaluate()
        # on the UI thread, when the user presses Enter: answers.put(line + "\n"); to end: answers.put(None)

    Attributes:
        waited: seconds spent blocked waiting for input, over the console's life.
        interrupted: Ctrl-C arrived while waiting for input (the read returned EOF and the
            evaluation was halted).
    """

    def __init__(
        self,
        input: int | BinaryIO | Callable[[], str | bytes | None] = 0,
        output: TextIO | Callable[[str], object] | None = None,
    ):
        self.input = input
        self.output = output
        self.waited = 0.0
        self.interrupted = False
        self._buffer = b""
        self._pos = 0
        self._pushed: list[int] = []
        self._eof = False
        # CLIPS keeps what it reads as UTF-8 text: bytes that are not UTF-8 become U+FFFD here, as
        # they arrive (a character split across two reads is kept whole by the incremental decoder)
        self._utf8 = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def read_byte(self, before_wait: Callable[[], None] | None = None) -> int:
        """The next byte of input (0..255), or -1 at its end; `before_wait()` runs when the read
        has to wait for more input (the caller flushes its output there).

        Raises:
            KeyboardInterrupt: Ctrl-C while waiting (also recorded in `interrupted`).
        """
        if self._pushed:
            return self._pushed.pop()
        if self._pos < len(self._buffer):
            b = self._buffer[self._pos]
            self._pos += 1
            return b
        if self._eof:
            return _EOF
        if before_wait is not None:
            before_wait()
        t0 = time.perf_counter()
        try:
            if isinstance(self.input, int):
                chunk = os.read(self.input, 65536)
            elif callable(self.input):
                chunk = self.input() or b""
                if isinstance(chunk, str):
                    chunk = chunk.encode()
                elif not isinstance(chunk, bytes | bytearray):
                    raise TypeError(f"console input callable returned {type(chunk).__name__}; expected str or bytes")
            else:
                reader = getattr(self.input, "read1", None) or self.input.read
                chunk = reader(65536)
        except KeyboardInterrupt:
            self.interrupted = True
            raise
        finally:
            self.waited += time.perf_counter() - t0
        if not chunk:
            self._eof = True
            tail = self._utf8.decode(b"", final=True).encode()  # an incomplete character at the end
            if not tail:
                return _EOF
            self._buffer, self._pos = tail, 1
            return tail[0]
        chunk = self._utf8.decode(chunk).encode()
        if not chunk:  # only the start of a character so far: read on
            return self.read_byte(before_wait)
        self._buffer, self._pos = chunk, 1
        return chunk[0]

    def unread(self, ch: int) -> None:
        """Give back one byte: the next `read_byte` returns it (CLIPS's look-ahead)."""
        if ch != _EOF:
            self._pushed.append(ch)

    def write(self, text: str) -> None:
        """Write program output now (no-op without `output`)."""
        if self.output is not None and text:
            if callable(self.output):
                self.output(printable(text))
                return
            raw = getattr(self.output, "buffer", None)
            if raw is not None and printable(text) != text:  # bytes that are not UTF-8: written as they are
                self.output.flush()
                raw.write(text.encode("utf-8", "surrogateescape"))
                raw.flush()
                return
            self.output.write(printable(text))
            self.output.flush()

    @classmethod
    def standard(cls, echo_output: bool = True) -> Console:
        """`sys.stdin` (its binary buffer); output to `sys.stdout` when `echo_output`."""
        stream = getattr(sys.stdin, "buffer", None)
        return cls(0 if stream is None else stream, sys.stdout if echo_output else None)


class ConsoleRouter:
    """The router of `stdin` for one CLIPS environment (see the module's docstring).

    Args:
        environment: clipspy's `Environment` (kept alive until the router is removed).
        console: the console, or None to refuse console input with `REFUSAL`.
        flush: called before the console waits for input (writes the program's pending output);
            held weakly when it is a bound method, so the router keeps nothing else alive.
        key: the environment's key in `clips_halt.WATCHDOG` (its clock is paused while input is awaited).

    The router is removed by `close()` or when it is garbage collected, before its callbacks are
    freed (CLIPS holds raw pointers to them).
    """

    def __init__(
        self, environment: Any, console: Console | None, flush: Callable[[], None] | None = None, key: int = 0
    ):
        self._state = state = _RouterState(environment._env, console, flush, key)
        callbacks = (
            native.callback("RouterQueryFunction", _query),
            native.callback("RouterWriteFunction", _write),
            native.callback("RouterReadFunction", state.read, _on_error),
            native.callback("RouterUnreadFunction", state.unread),
            native.callback("RouterExitFunction", _exit),
        )
        if not native.lib.AddRouter(state.ep, ROUTER_NAME, ROUTER_PRIORITY, *callbacks, native.abi.NULL):
            raise RuntimeError("CLIPS refused to add the console router")
        self._finalizer = weakref.finalize(self, _remove, state.ep, environment, callbacks)

    @property
    def console(self) -> Console | None:
        return self._state.console

    @console.setter
    def console(self, console: Console | None) -> None:
        """Serve `stdin` from `console` from now on (None: refuse)."""
        self._state.console = console

    @property
    def refused(self) -> int:
        """How many reads of `stdin` were refused (no console)."""
        return self._state.refused

    def close(self) -> None:
        """Remove the router from the environment (idempotent)."""
        self._finalizer()


class _RouterState:
    """What the read callbacks use; holds neither the router nor (strongly) the flush's owner."""

    def __init__(self, env: Any, console: Console | None, flush: Callable[[], None] | None, key: int):
        self.ep = native.env_pointer(env)
        self.console = console
        self.flush = weakref.WeakMethod(flush) if inspect.ismethod(flush) else (lambda: flush)
        self.key = key
        self.refused = 0

    def read(self, env, name, context):  # pragma: no cover - called from C
        console = self.console
        if console is None:
            self.refused += 1
            native.lib.SetHaltExecution(self.ep, True)
            native.lib.SetEvaluationError(self.ep, True)
            native.lib.WriteString(self.ep, b"stderr", REFUSAL.encode())
            return _EOF
        waited = console.waited
        try:
            return console.read_byte(self.before_wait)
        except KeyboardInterrupt:
            native.lib.SetHaltExecution(self.ep, True)
            native.lib.SetHaltRules(self.ep, True)
            return _EOF
        finally:
            if console.waited != waited and self.key:
                WATCHDOG.resume(self.key)

    def before_wait(self) -> None:
        flush = self.flush()
        if flush is not None:
            flush()
        if self.key:
            WATCHDOG.pause(self.key)

    def unread(self, env, name, ch, context):  # pragma: no cover - called from C
        if self.console is not None:
            self.console.unread(ch)
        return ch


def _query(env, name, context):  # pragma: no cover - called from C
    return native.abi.string(name) == _STDIN


def _write(env, name, text, context):  # pragma: no cover - `stdin` is never written to
    return None


def _exit(env, code, context):  # pragma: no cover - called from C
    return None


def _on_error(exc_type, exc, tb):  # pragma: no cover - an error inside the read callback
    sys.stderr.write(f"console input failed: {exc_type.__name__}: {exc}\n")
    return _EOF


def _remove(ep: Any, environment: Any, callbacks: tuple) -> None:
    """Remove the router while `environment` (held until now) and `callbacks` are alive."""
    native.lib.DeleteRouter(ep, ROUTER_NAME)
