"""A call-depth limit for recursive deffunctions and generic functions, so CLIPS cannot crash.

CLIPS 6.4 has no recursion limit: `(deffunction f () (f))` recurses on the C stack until the
process dies with SIGSEGV (measured here: about 8,000 nested calls of a small deffunction fill
the default 8 MiB thread stack) -- a rule file could take down a server. Only functions on a
cycle of the static call graph can recurse, so only those are watched: CLIPS's
`(watch deffunctions)` / `(watch generic-functions)` trace prints each call with its evaluation
depth (`DFN >> f ED:12 (...)`, `GNC >> g  ED:12 (...)`); the `OutputRouter` hands each piece to a
`CallDepthGuard`, which sets CLIPS's halt flags (`clips_halt.halt`) when the depth passes the
limit. Functions that cannot recurse are not traced and cost nothing.
"""

from __future__ import annotations

import re
from typing import Any, Sequence

from .clips_halt import halt
from .constructs import ConstructSyntaxError, split_constructs

_HEAD_RE = re.compile(r'\(\s*([^\s()";]+)')
_STRING_RE = re.compile(r'"(?:\\.|[^"\\])*"')
_COMMENT_RE = re.compile(r";[^\n]*")

DEFAULT_MAX_CALL_DEPTH = 1000  # about 1/8 of the depth that overflows an 8 MiB stack


def recursive_functions(sources: Sequence[tuple[str, str]]) -> dict[str, str]:
    """Names of deffunctions and generic functions that may call themselves, directly or through others.

    Returns `{name: "deffunction" | "defgeneric"}`. Over-approximates: any call of a function
    name inside a body is an edge (the branch may never run).
    """
    bodies: dict[str, tuple[str, list[str]]] = {}
    for file, text in sources:
        try:
            constructs = split_constructs(text, file)
        except ConstructSyntaxError:
            continue
        for c in constructs:
            if c.kind not in ("deffunction", "defmethod", "defgeneric"):
                continue
            tokens = c.text[1:].split(None, 2)
            if len(tokens) < 2:
                continue
            name = tokens[1].rstrip(")").rsplit("::", 1)[-1]
            kind = "deffunction" if c.kind == "deffunction" else "defgeneric"
            body = _COMMENT_RE.sub("", _STRING_RE.sub('""', c.text))
            calls = [h.rsplit("::", 1)[-1] for h in _HEAD_RE.findall(body)[1:]]
            _, old = bodies.get(name, (kind, []))
            bodies[name] = (kind, old + calls)
    graph = {n: {c for c in calls if c in bodies} for n, (_, calls) in bodies.items()}
    out: dict[str, str] = {}
    for start in graph:  # n is recursive when n is reachable from its own callees
        seen: set[str] = set()
        stack = list(graph[start])
        while stack:
            n = stack.pop()
            if n == start:
                out[start] = bodies[start][0]
                break
            if n not in seen:
                seen.add(n)
                stack.extend(graph[n])
    return out


def watch_if_recursive(env: Any, construct_text: str, recursive: dict[str, str]) -> None:
    """After building `construct_text` into `env` (a CLIPS `Environment *`): trace its calls when it
    defines a function in `recursive` (see `recursive_functions`), so a `CallDepthGuard` sees them."""
    from clips._clips import ffi, lib

    tokens = construct_text[1:].split(None, 2)
    if len(tokens) < 2 or tokens[0] not in ("deffunction", "defmethod", "defgeneric"):
        return
    name = tokens[1].rstrip(")").rsplit("::", 1)[-1]
    kind = recursive.get(name)
    if kind == "deffunction":
        ptr = lib.FindDeffunction(env, name.encode())
        if ptr != ffi.NULL:
            lib.DeffunctionSetWatch(ptr, True)
    elif kind == "defgeneric":
        ptr = lib.FindDefgeneric(env, name.encode())
        if ptr != ffi.NULL:
            lib.DefgenericSetWatch(ptr, True)


def depth_message(guard: "CallDepthGuard") -> str:
    name, depth = guard.tripped or ("?", 0)
    return (f"recursion too deep: {name} reached call depth {depth} (limit {guard.limit}); CLIPS has no limit of its "
            "own and would overflow the stack")


class CallDepthGuard:
    """Fed every `stdout` piece by `OutputRouter`; halts CLIPS when a watched call nests too deep.

    Attributes:
        tripped: `(function name, depth)` once the limit was passed, else None (reset per evaluation).
    """

    __slots__ = ("limit", "tripped", "_expect", "_name")

    def __init__(self, limit: int):
        self.limit = limit
        self.tripped: tuple[str, int] | None = None
        self._expect = False
        self._name = ""

    def __call__(self, env: Any, piece: str) -> None:
        if self._expect:
            self._expect = False
            if piece.isdigit() and int(piece) > self.limit and self.tripped is None:
                self.tripped = (self._name, int(piece))
                halt(env)
        elif piece == " ED:":
            self._expect = True
        elif piece.strip():
            self._name = piece


def is_call_trace(pieces: list[str], i: int) -> bool:
    """True when pieces[i] starts a `DFN`/`GNC` watch line: `DFN `, `>> ` or `<< `, the name, then
    the separate pieces ` ED:` and the depth (so program text that prints "DFN >> " stays output)."""
    # CLIPS 6.4 pieces: DFN: "DFN ", ">> ", name, " ED:", depth;  GNC: "GNC ", ">>", " ", name, " ", " ED:", depth
    p = pieces[i]
    j = i + 3 if p == "DFN " else i + 5 if p == "GNC " else -1
    return (j > 0 and j + 1 < len(pieces) and pieces[i + 1].strip() in (">>", "<<") and pieces[j] == " ED:"
            and pieces[j + 1].isdigit())
