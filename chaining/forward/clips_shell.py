"""CLIPS's command loop on a clipspy environment, behind the project's safety gate.

What CLIPS's own `CommandLoop` (CLIPS 6.4 commline.c) does with the characters it reads, done
here with CLIPS's own functions so that every command and function behaves and prints exactly
as in the `clips` executable: characters are appended to a command buffer; at each end of line,
when CLIPS's `CompleteCommand` says the buffer holds a complete command (a construct, a
function call, a constant or a variable; parentheses balanced, strings closed), CLIPS's
`RouteCommand` executes its first command (and prints a non-void result, as at the `CLIPS>`
prompt), the rest of the line is dropped (as CLIPS drops `(* 2 3)` of `(+ 1 2) (* 2 3)`), and
CLIPS's error and halt flags and its garbage frame are cleared. Output goes through the
environment's routers: CLIPS's terminal router ("fileio") writes to the process's stdout and
stderr, and `(read)`/`(readline)` read its stdin.

What the shell does itself (and why):
- the safety gate: a command that calls a function of `rules.UNSAFE_FUNCTIONS` (it reaches the
  operating system) is refused with `[WORKBENCH2]` unless unsafe use was allowed; `load` and
  `batch` of a file are allowed when the file itself passes the gate;
- `(exit)` ends the loop (CLIPS's would end the process without Python's clean-up);
- `(batch FILE)` / `(batch* FILE)` feed the file's characters to this loop (CLIPS's batch would
  queue them for its own `CommandLoop`), so each command of the file passes the gate; `batch`
  echoes them as CLIPS does, `batch*` does not and then prints TRUE.
A command runs on a worker thread so that Ctrl-C (KeyboardInterrupt in the main thread) can halt
CLIPS (`clips_halt.halt`), as Ctrl-C does in the `clips` executable.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import clips

from . import clips_native as native
from .clips_halt import clear as clear_halt
from .clips_halt import halt

PROMPT = "CLIPS> "
# (exit), (exit 3), (load "f"), (load* f), (batch "f"), (batch* f): the whole command, one literal argument
_SPECIAL = re.compile(rb'^\s*\(\s*(exit|load\*?|batch\*?)\s*("(?:[^"\\]|\\.)*"|[^\s()";]+)?\s*\)\s*$', re.S)
# (load ...), (batch* ...) whose argument is not one literal file name (an expression, a variable)
_FILE_COMMAND = re.compile(rb"^\s*\(\s*(load\*?|batch\*?)(?=[\s()])")
_STRING_OR_COMMENT = re.compile(rb'"(?:[^"\\]|\\.)*"|;[^\n]*')
_CALL = re.compile(rb"\(\s*([^\s()\";&|~<>]+)")
_SPACE = frozenset(b" \t\r\n\f")


def unsafe_calls(text: bytes | str, unsafe: dict[str, str]) -> list[tuple[str, str]]:
    """The functions of `unsafe` (name -> why) that `text` calls, in order of first call, as
    `(name, why)`; strings and comments are not looked into."""
    data = text.encode() if isinstance(text, str) else text
    found: dict[str, str] = {}
    for m in _CALL.finditer(_STRING_OR_COMMENT.sub(b" ", data)):
        name = m.group(1).decode(errors="replace")
        if name in unsafe and name not in found:
            found[name] = unsafe[name]
    return list(found.items())


class ClipsShell:
    """A CLIPS command loop fed with characters (`feed`); see the module's docstring.

    Args:
        environment: a clipspy `Environment` (a new one by default) with CLIPS's terminal router.
        allow_unsafe: permit the functions of `rules.UNSAFE_FUNCTIONS`.
        prompt: print `CLIPS> ` after each command of an echoed batch file (interactive use).
        unsafe: the gated functions, name -> why (default `rules.UNSAFE_FUNCTIONS`).
        time_limit: seconds one command may run (each command of a batch file on its own); past
            it CLIPS is halted (`clips_halt.halt`, as Ctrl-C does), `[WORKBENCH4]` says so on
            stderr and the loop goes on. None: no limit. Time spent waiting in `(read)` counts (a
            command blocked there is halted when its input arrives).

    Attributes:
        exit_code: set by `(exit [N])`: the loop should end with this status.
    """

    def __init__(
        self,
        environment: Any = None,
        *,
        allow_unsafe: bool = False,
        prompt: bool = False,
        unsafe: dict[str, str] | None = None,
        time_limit: float | None = None,
    ):
        if time_limit is not None and not time_limit > 0:
            raise ValueError(f"time_limit must be a positive number of seconds or None, got {time_limit!r}")
        if unsafe is None:
            from rules import UNSAFE_FUNCTIONS as unsafe
        self.env = environment if environment is not None else clips.Environment()
        self._ep = native.env_pointer(self.env._env)
        self.allow_unsafe = allow_unsafe
        self.prompt = prompt
        self._unsafe = dict(unsafe)
        self.exit_code: int | None = None
        self.time_limit = time_limit
        self._buffer = bytearray()
        self._depth = 0
        self._in_string = False
        self._escape = False
        self._in_comment = False
        from .clips_shell_guard import ShellCallGuard

        self._calls = ShellCallGuard(self.env)  # the call-depth limit of `kb run`: no stack overflow

    # -- output ------------------------------------------------------------------------
    def write(self, name: str, text: str) -> None:
        """Write through CLIPS's routers (`stdout`, `stderr`...), in order with CLIPS's own output."""
        native.lib.WriteString(self._ep, name.encode(), text.encode())

    # -- input -------------------------------------------------------------------------
    def pending(self) -> bool:
        """True while part of a command has been read (a continuation line is expected)."""
        return any(b not in _SPACE for b in self._buffer)

    def discard(self) -> None:
        """Forget a partly typed command (Ctrl-C at the prompt)."""
        self._buffer.clear()
        self._depth = 0
        self._in_string = self._escape = self._in_comment = False

    def feed(self, data: bytes, echo: bool = False, print_result: bool = True) -> None:
        """Read `data` as typed input: execute each command as soon as it is complete.
        `echo`: write the characters as they are read (CLIPS's `batch`); `print_result`: print
        a command's value (not for `batch*`). Stops after `(exit)`."""
        start = 0
        for i in range(len(data)):
            if self.exit_code is not None:
                return
            if self._take(data[i]):
                if echo:
                    self.write("stdout", data[start : i + 1].decode(errors="replace"))
                    start = i + 1
                self._execute_buffer(print_result)
                if echo and self.prompt:
                    self.write("stdout", PROMPT)
        if echo and start < len(data) and self.exit_code is None:
            self.write("stdout", data[start:].decode(errors="replace"))

    def finish(self, print_result: bool = True) -> None:
        """End of input: execute what is left when CLIPS takes it for a complete command."""
        if self.pending() and self.exit_code is None:
            self._buffer += b"\n"
            if native.lib.CompleteCommand(bytes(self._buffer)) != 0:
                self._execute_buffer(print_result)
        self.discard()

    def _take(self, b: int) -> bool:
        """Append one byte; True at an end of line where CLIPS's `CompleteCommand` finds a
        complete command. Parentheses, strings and comments are followed here only so that
        CLIPS is not asked at every line of a long construct."""
        self._buffer.append(b)
        if self._in_string:
            if self._escape:
                self._escape = False
            elif b == 92:  # backslash
                self._escape = True
            elif b == 34:
                self._in_string = False
            return False
        if b == 10 or b == 13:
            self._in_comment = False
            if self._depth > 0:
                return False
            if not self.pending():
                self._buffer.clear()
                return False
            return native.lib.CompleteCommand(bytes(self._buffer)) != 0
        if self._in_comment:
            return False
        if b == 34:
            self._in_string = True
        elif b == 59:  # ;
            self._in_comment = True
        elif b == 40:
            self._depth += 1
        elif b == 41:
            self._depth -= 1
        return False

    # -- execution ---------------------------------------------------------------------
    def _execute_buffer(self, print_result: bool = True) -> None:
        command = bytes(self._buffer)
        self.discard()
        self.execute(command, print_result)

    def execute(self, command: bytes, print_result: bool = True) -> None:
        """Execute one complete command as CLIPS's command loop does, after the safety gate."""
        m = _SPECIAL.match(command)
        if m is not None:
            what = m.group(1).decode()
            arg = m.group(2)
            if what == "exit":
                self.exit_code = _exit_status(arg)
                return
            path = _file_argument(arg) if arg is None or arg[:1] not in b"?$" else None  # a variable: not a name
            if path is not None:
                text = _read(path)
                if text is None:  # nothing to check and nothing read: CLIPS's own answer
                    self._cannot_open(what, path, print_result)
                    return
                if not self._gate(text, f"the file {path}"):
                    return
                if what.startswith("batch"):
                    self._batch(text, echo=what == "batch")
                    return
                self._route(command, print_result)
                self._calls.defined(text, path)
                return
        head = _FILE_COMMAND.match(command)
        if head is not None and not self.allow_unsafe:
            what = head.group(1).decode()
            self.write(
                "stderr",
                f"[WORKBENCH2] Refused: ({what} ...) here needs the file name written out (a string or a symbol), "
                "so that the safety gate can check the file before CLIPS reads it; start "
                "`workbench kb shell --allow-unsafe` (or set allow_unsafe_rules) to use a file named otherwise.\n",
            )
            return
        if not self._gate(command, "this command"):
            return
        self._route(command, print_result)
        self._calls.defined(command)

    def _cannot_open(self, what: str, path: str, print_result: bool) -> None:
        """What CLIPS prints for `(load "f")`, `(load* "f")`, `(batch "f")`, `(batch* "f")` of a
        file it cannot open: `[ARGACCES3]` naming the function (`batch` for both batches) and
        the value FALSE. Answered here, not by CLIPS, so that a file appearing in between is never
        loaded unchecked."""
        function = "batch" if what.startswith("batch") else what
        self.write("stderr", f"[ARGACCES3] Function '{function}' was unable to open file '{path}'.\n")
        if print_result:
            self.write("stdout", "FALSE\n")

    def _gate(self, text: bytes | str, what: str) -> bool:
        if self.allow_unsafe:
            return True
        calls = unsafe_calls(text, self._unsafe)
        if not calls:
            return True
        named = "; ".join(f"{name} ({why})" for name, why in calls)
        self.write(
            "stderr",
            f"[WORKBENCH2] Refused: {what} calls {named}. Functions that reach the operating system are "
            "off; start `workbench kb shell --allow-unsafe` to permit them.\n",
        )
        return False

    def _batch(self, text: bytes, echo: bool) -> None:
        if echo:  # `batch` returns TRUE before the file's commands run (they are queued as input)
            self.write("stdout", "TRUE\n")
            if self.prompt:
                self.write("stdout", PROMPT)
        saved = (bytes(self._buffer), self._depth, self._in_string, self._escape, self._in_comment)
        self.discard()
        self.feed(text, echo=echo, print_result=echo)
        if self.exit_code is None:
            self.finish(print_result=echo)
        self._buffer[:] = saved[0]
        self._depth, self._in_string, self._escape, self._in_comment = saved[1:]
        if not echo and self.exit_code is None:
            self.write("stdout", "TRUE\n")

    def _route(self, command: bytes, print_result: bool = True) -> None:
        ep = self._ep
        lib = native.lib

        def run() -> None:
            lib.FlushPPBuffer(ep)
            lib.SetPPBufferStatus(ep, False)
            lib.RouteCommand(ep, command, print_result)
            lib.FlushPPBuffer(ep)
            lib.FlushParsingMessages(ep)

        timed_out = run_interruptibly(run, lambda: halt(self.env._env), self.time_limit)
        clear_halt(self.env._env)
        too_deep = self._calls.tripped_message()
        if too_deep is not None:
            self.write("stderr", too_deep)
        if timed_out:
            self.write(
                "stderr",
                f"[WORKBENCH4] Halted: the command ran past the shell's time limit of {self.time_limit:g} s "
                "(--time-limit, setting kb_shell_time_limit_s).\n",
            )
        lib.CleanCurrentGarbageFrame(ep, native.abi.NULL)
        lib.CallPeriodicTasks(ep)

    def load(self, path: str | Path) -> bool:
        """`(load "path")` without printing its result, behind the gate; False when refused or failed."""
        text = _read(str(path))
        if text is None:
            self.write("stderr", f"[WORKBENCH3] Cannot read the file {path}.\n")
            return False
        if not self._gate(text, f"the file {path}"):
            return False
        ok = native.lib.RouteCommand(self._ep, b"(load " + _quote(str(path)) + b")", False)
        self._calls.defined(text, str(path))
        return bool(ok)


def run_interruptibly(work: Callable[[], None], interrupt: Callable[[], None], time_limit: float | None = None) -> bool:
    """Run `work` on a worker thread; a KeyboardInterrupt in the calling thread, or `time_limit`
    seconds passing, calls `interrupt()` (it must make `work` return) and waits for `work` to end.
    Returns True when the time limit interrupted it."""
    failure: list[BaseException] = []
    done = threading.Event()  # not Thread.join: a KeyboardInterrupt inside join can leave it unreliable

    def target() -> None:
        try:
            work()
        except BaseException as exc:  # pragma: no cover - CLIPS reports its own errors
            failure.append(exc)
        finally:
            done.set()

    deadline = None if time_limit is None else time.monotonic() + time_limit
    timed_out = False
    threading.Thread(target=target, name="clips-command", daemon=True).start()
    while not done.is_set():
        try:
            wait = 0.1 if deadline is None or timed_out else min(0.1, max(0.0, deadline - time.monotonic()))
            done.wait(wait)
            if deadline is not None and not timed_out and not done.is_set() and time.monotonic() >= deadline:
                timed_out = True
                interrupt()
        except KeyboardInterrupt:
            interrupt()
    if failure:
        raise failure[0]
    return timed_out


def _exit_status(arg: bytes | None) -> int:
    if arg is None:
        return 0
    try:
        return int(arg) & 0xFF
    except ValueError:
        return 0


def _file_argument(arg: bytes | None) -> str | None:
    if arg is None:
        return None
    text = arg.decode(errors="replace")
    if text.startswith('"'):
        return text[1:-1].replace('\\"', '"').replace("\\\\", "\\")
    return text


def _read(path: str) -> bytes | None:
    try:
        return Path(path).read_bytes()
    except OSError:
        return None


def _quote(text: str) -> bytes:
    return b'"' + text.replace("\\", "\\\\").replace('"', '\\"').encode() + b'"'
