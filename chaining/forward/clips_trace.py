"""Python routers for what CLIPS programs print (`stdout`; `stderr` and `stdwrn`).

Each piece CLIPS prints to a claimed name is appended to a list (one Python call per piece).
The forward engine's trace does not come through here (see `clips_native`); what does is the
program's own output, and, for a knowledge base with recursive functions, CLIPS's call trace,
which a `CallDepthGuard` reads as it is printed (`clips_recursion`); `program_output` drops
those call-trace lines.
"""

from __future__ import annotations

import re
from typing import Any

import clips
import clips.routers as _clipspy_routers
from clips._clips import ffi

from .clips_recursion import call_trace_end


class OutputRouter(clips.Router):
    """Collects every piece written to `stdout` (program text and call-trace lines).

    The default priority (45) puts it above clipspy's error router (40), for environments that
    keep CLIPS's own routers; `ClipsRunner` uses -1 (below CLIPS's string routers).
    """

    __slots__ = ("pieces", "guard")

    def __init__(self, name: str = "workbench-stdout", priority: int = 45):
        super().__init__(name, priority)
        self.pieces: list[str] = []
        self.guard: Any = None  # a `clips_recursion.CallDepthGuard` when recursive functions are watched

    def query(self, name: str) -> bool:
        return name == "stdout"

    def write(self, name: str, message: str) -> None:
        self.pieces.append(message)


class MessageRouter(clips.Router):
    """Collects warnings and errors (`stderr`, `stdwrn`) as `(name, piece)` pairs, in order."""

    __slots__ = ("pieces",)

    def __init__(self, name: str = "workbench-messages", priority: int = -1):
        super().__init__(name, priority)
        self.pieces: list[tuple[str, str]] = []

    def query(self, name: str) -> bool:
        return name in ("stderr", "stdwrn")

    def write(self, name: str, message: str) -> None:
        self.pieces.append((name, message))


_STDOUT = b"stdout"
_original_query = _clipspy_routers.query_function
_original_write = _clipspy_routers.write_function


# clipspy routes every router callback through two module-level cffi externs that decode the
# logical name and call a Python method; with one C->Python call per printed piece, that
# overhead adds up. These replacements take a fast path for `OutputRouter` only
# (compare the name as bytes, append the piece) and hand every other router to clipspy's own
# functions unchanged. Redefining an extern "Python" function is supported by cffi.
@ffi.def_extern(name="query_function")
def _query_function(env, name, context):  # pragma: no cover - called from C
    router = ffi.from_handle(context)
    if type(router) is OutputRouter:
        return ffi.string(name) == _STDOUT
    return _original_query(env, name, context)


@ffi.def_extern(name="write_function")
def _write_function(env, name, message, context):  # pragma: no cover - called from C
    router = ffi.from_handle(context)
    if type(router) is OutputRouter:
        # A program may print bytes that are not UTF-8 (a `readline` after a `get-char` that took the
        # first byte of a character): kept as surrogate escapes, so the console gets CLIPS's bytes back
        # (`Console.write`) and everything else gets U+FFFD (`printable`).
        piece = ffi.string(message).decode(errors="surrogateescape")
        router.pieces.append(piece)
        if router.guard is not None:
            router.guard(env, piece)
        return None
    return _original_write(env, name, message, context)


def program_output(pieces: list[str]) -> str:
    """The text a program printed: the captured `stdout` pieces without the `DFN`/`GNC`/`HND`
    call-trace lines of watched recursive functions and handlers (`clips_recursion.call_trace_end`)."""
    out: list[str] = []
    n = len(pieces)
    i = 0
    while i < n:
        end = call_trace_end(pieces, i)
        if end > 0:
            i = end
            continue
        out.append(pieces[i])
        i += 1
    return "".join(out)


_ESCAPED = re.compile("[\udc80-\udcff]")


def printable(text: str) -> str:
    """`text` with the bytes a program printed that are not UTF-8 (surrogate escapes) as U+FFFD."""
    if _ESCAPED.search(text) is None:
        return text
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
