"""Capture of what CLIPS prints, and the firing/fact trace read from CLIPS's own watch output.

CLIPS 6.4 writes `(watch rules)` and `(watch facts)` lines to the `stdout` logical name, the
same one `printout t` uses, in fixed pieces:
    rules: "FIRE %4d " | rule name | ": " | "f-1" | "," | "*" | ... | "\\n"
    facts: "==> " or "<== " | "f-12     " | "(" | "a" | ... one piece per token ... | "\\n"
(CLIPS 6.4 source, engine.c `FireRule` and factmngr.c `PrintFactWithIdentifier`). The router
only appends each piece to a list (one Python call per piece, nothing else), and the list is
split into printed text and trace records after the run. A watch header is recognised only
as a whole piece at a piece boundary followed by its separator piece, so program text that
merely contains "FIRE" or "==>" stays output.
"""

from __future__ import annotations

import re
from typing import Any

import clips
import clips.routers as _clipspy_routers
from clips._clips import ffi

from .clips_recursion import is_call_trace
from .result import FactEvent, Firing

_FIRE_RE = re.compile(r"FIRE +\d+ ")
_FACT_HEAD = {"==> ": "assert", "<== ": "retract"}


class OutputRouter(clips.Router):
    """Collects every piece written to `stdout` (program text and watch lines).

    Its priority (45) is above clipspy's error router (40) so CLIPS asks this router first and
    each piece costs one query and one write callback, not two queries.
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
    """Collects warnings and errors (`stdwrn`, `stderr`); below clipspy's error router, which shares them."""

    __slots__ = ("pieces",)

    def __init__(self, name: str = "workbench-messages", priority: int = 20):
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
# overhead dominates traced runs. These replacements take a fast path for `OutputRouter` only
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
        piece = ffi.string(message).decode()
        router.pieces.append(piece)
        if router.guard is not None:
            router.guard(env, piece)
        return None
    return _original_write(env, name, message, context)


def split_trace(pieces: list[str], calls: bool = False) -> tuple[str, list[Firing], list[FactEvent]]:
    """Split captured `stdout` pieces into (printed text, firings, fact events).

    Fact ids in a firing are the `f-N` entries of the activation's partial match, in pattern
    order; `*` (a `not`/`exists`/`forall` pattern) is skipped. `calls=True`: also drop the
    `DFN`/`GNC` call-trace lines of watched recursive functions (`clips_recursion`).
    """
    out: list[str] = []
    firings: list[Firing] = []
    events: list[FactEvent] = []
    n = len(pieces)
    i = 0
    fire_match = _FIRE_RE.fullmatch
    while i < n:
        p = pieces[i]
        head = p[:5]
        if head == "FIRE " and i + 2 < n and pieces[i + 2] == ": " and fire_match(p):
            j = i + 3
            ids = []
            while j < n:
                tok = pieces[j]
                if tok == "\n":
                    break
                if tok[:2] == "f-":
                    ids.append(int(tok[2:]))
                j += 1
            firings.append(Firing(pieces[i + 1], tuple(ids)))
            i = j + 1
            continue
        if (head == "==> " or head == "<== ") and i + 1 < n:
            nxt = pieces[i + 1]
            if nxt[:2] == "f-" and nxt[2:].strip().isdigit():
                events.append(FactEvent(_FACT_HEAD[head], int(nxt[2:]), len(firings) - 1 if firings else None))
                j = i + 2
                while j < n and pieces[j] != "\n":
                    j += 1
                i = j + 1
                continue
        if calls and is_call_trace(pieces, i):
            while i < n and not pieces[i].endswith("\n"):
                i += 1
            i += 1
            continue
        out.append(p)
        i += 1
    return "".join(out), firings, events
