"""A call-depth limit for recursive deffunctions, generic functions and message-handlers, so
CLIPS cannot crash.

CLIPS 6.4 has no recursion limit: `(deffunction f () (f))` or a message-handler doing
`(send ?self go)` recurses on the C stack until the process dies with SIGSEGV (measured here:
about 8,000 nested calls of a small deffunction fill the default 8 MiB thread stack) -- a rule
file could take down a server. Only functions and handlers on a cycle of the static call graph
can recurse, so only those are watched: CLIPS's watch trace prints each call with its evaluation
depth (`DFN >> f ED:12 (...)`, `GNC >> g  ED:12 (...)`, `HND >> go primary in class FOO\n ED:12
(...)`); the `OutputRouter` hands each piece to a `CallDepthGuard`, which sets CLIPS's halt flags
(`clips_halt.halt`) when the depth passes the limit. What cannot recurse is not traced and costs
nothing.

The call graph over-approximates: any call of a function name inside a body is an edge, and
`(send X msg ...)` is an edge to every handler named `msg` (to every handler when the message is
not a literal symbol).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from .clips_halt import halt
from .constructs import ConstructSyntaxError, split_constructs

_HEAD_RE = re.compile(r'\(\s*([^\s()";]+)')
_SEND_RE = re.compile(r'\(\s*send\s+(?:\([^()]*\)|[^\s()]+)\s+([^\s()";]+)')
_HANDLER = "handler:"  # graph keys of message-handlers: "handler:<message name>"
_HANDLER_TYPES = ("primary", "around", "before", "after")
_STRING_RE = re.compile(r'"(?:\\.|[^"\\])*"')
_COMMENT_RE = re.compile(r";[^\n]*")

DEFAULT_MAX_CALL_DEPTH = 1000  # about 1/8 of the depth that overflows an 8 MiB stack


def recursive_functions(sources: Sequence[tuple[str, str]]) -> dict[str, str]:
    """Deffunctions, generic functions and message-handlers that may call themselves, directly
    or through others.

    Returns `{name: "deffunction" | "defgeneric"}` and, for message-handlers,
    `{"handler:<message>": "defmessage-handler"}`. Over-approximates (see the module docstring).
    """
    bodies: dict[str, tuple[str, list[str]]] = {}
    for file, text in sources:
        try:
            constructs = split_constructs(text, file)
        except ConstructSyntaxError:
            continue
        for c in constructs:
            defined = _callable_defined(c.text)
            if defined is None:
                continue
            name, kind, _ = defined
            body = _COMMENT_RE.sub("", _STRING_RE.sub('""', c.text))
            calls = [h.rsplit("::", 1)[-1] for h in _HEAD_RE.findall(body)[1:]]
            for message in _SEND_RE.findall(body):
                calls.append(_HANDLER + message if message[0] not in "?$" else _HANDLER + "*")
            if "send" in calls and not _SEND_RE.search(body):
                calls.append(_HANDLER + "*")  # a send whose message could not be read
            _, old = bodies.get(name, (kind, []))
            bodies[name] = (kind, old + calls)
    handlers = {n for n in bodies if n.startswith(_HANDLER)}

    def callees(calls: list[str]) -> set[str]:
        out = {c for c in calls if c in bodies}
        if _HANDLER + "*" in calls:
            out |= handlers
        return out

    graph = {n: callees(calls) for n, (_, calls) in bodies.items()}
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


def _callable_defined(construct_text: str) -> tuple[str, str, list[str]] | None:
    """`(graph key, kind, tokens)` when the construct defines a deffunction, a generic function
    or method (key: the name without module), or a message-handler (key: "handler:<message>");
    None otherwise. `tokens`: the construct's first words (keyword, name or class, ...)."""
    tokens = construct_text[1:].split(None, 4)
    if len(tokens) < 2:
        return None
    keyword = tokens[0]
    if keyword == "defmessage-handler":
        return (_HANDLER + tokens[2].rstrip(")"), keyword, tokens) if len(tokens) >= 3 else None
    if keyword in ("deffunction", "defmethod", "defgeneric"):
        kind = "deffunction" if keyword == "deffunction" else "defgeneric"
        return tokens[1].rstrip(")").rsplit("::", 1)[-1], kind, tokens
    return None


def watch_if_recursive(env: Any, construct_text: str, recursive: dict[str, str]) -> None:
    """After building `construct_text` into `env` (a CLIPS `Environment *`): trace its calls when it
    defines a function or message-handler in `recursive` (see `recursive_functions`), so a
    `CallDepthGuard` sees them."""
    from clips._clips import ffi, lib

    defined = _callable_defined(construct_text)
    if defined is None or defined[0] not in recursive:
        return
    key, kind, tokens = defined
    if kind == "defmessage-handler":
        handler_type = tokens[3] if len(tokens) > 3 and tokens[3] in _HANDLER_TYPES else "primary"
        cls = lib.FindDefclass(env, tokens[1].encode())
        if cls != ffi.NULL:
            index = lib.FindDefmessageHandler(cls, tokens[2].rstrip(")").encode(), handler_type.encode())
            if index:
                lib.DefmessageHandlerSetWatch(cls, index, True)
    elif kind == "deffunction":
        ptr = lib.FindDeffunction(env, key.encode())
        if ptr != ffi.NULL:
            lib.DeffunctionSetWatch(ptr, True)
    else:
        ptr = lib.FindDefgeneric(env, key.encode())
        if ptr != ffi.NULL:
            lib.DefgenericSetWatch(ptr, True)


def depth_message(guard: CallDepthGuard) -> str:
    name, depth = guard.tripped or ("?", 0)
    return (
        f"recursion too deep: {name} reached call depth {depth} (limit {guard.limit}); CLIPS has no limit of its "
        "own and would overflow the stack"
    )


class CallDepthGuard:
    """Fed every `stdout` piece by `OutputRouter`; halts CLIPS when a watched call nests too deep.

    Attributes:
        tripped: `(function name, depth)` once the limit was passed, else None (reset per evaluation).
    """

    __slots__ = ("limit", "tripped", "_expect", "_want_name", "_name")

    def __init__(self, limit: int):
        self.limit = limit
        self.tripped: tuple[str, int] | None = None
        self._expect = False
        self._want_name = False
        self._name = ""

    def __call__(self, env: Any, piece: str) -> None:
        if self._expect:
            self._expect = False
            if piece.isdigit() and int(piece) > self.limit and self.tripped is None:
                self.tripped = (self._name, int(piece))
                halt(env)
            return
        p = piece.strip()
        if p == "ED:":  # " ED:" (DFN, GNC) or "       ED:" on its own line (HND)
            self._expect = True
        elif p in (">>", "<<"):
            self._want_name = True
        elif self._want_name and p:
            self._name = p
            self._want_name = False


def call_trace_end(pieces: list[str], i: int) -> int:
    """When pieces[i] starts a `DFN`/`GNC`/`HND` watch line (the kind, `>>` or `<<`, the name, ...,
    a separate `ED:` piece and the depth), the index just after that line; else -1 (so program
    text that merely prints "DFN >> " stays output)."""
    # CLIPS 6.4 pieces: DFN: "DFN ", ">> ", name, " ED:", depth, ...
    #                   GNC: "GNC ", ">>", " ", name, " ", " ED:", depth, ...
    #                   HND: "HND ", ">>", " ", name, " ", type, " in class ", class, "\n", "       ED:", depth, ...
    p = pieces[i]
    n = len(pieces)
    if p == "DFN ":
        j = i + 3
    elif p == "GNC ":
        j = i + 5
    elif p == "HND ":
        j = next((k for k in range(i + 2, min(i + 12, n)) if pieces[k].strip() == "ED:"), -1)
    else:
        return -1
    if not (
        0 < j
        and j + 1 < n
        and pieces[i + 1].strip() in (">>", "<<")
        and pieces[j].strip() == "ED:"
        and (p == "HND " or pieces[j] == " ED:")
        and pieces[j + 1].isdigit()
    ):
        return -1
    k = j + 1
    while k < n and not pieces[k].endswith("\n"):
        k += 1
    return k + 1
