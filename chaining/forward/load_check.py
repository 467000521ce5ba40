"""The backstop of `kb check` and of uploads: does real CLIPS load this validated rule text?

`rules` reimplements CLIPS's load-time checks and locates their errors precisely; where it misses
one, `kb run` would fail on its first load. `clips_refusals` closes that gap: it loads the sources
into a throw-away CLIPS environment exactly as `kb run` does (`ClipsRunner`, construct by
construct through `Build`) and turns the first refusal into a diagnostic at the construct's start.

Loading evaluates a few expressions (a defglobal's initial value, a deftemplate slot's static
default, a rule's salience), so it is bounded and kept from the outside world:
- not run at all when unsafe functions are allowed and the text names one (`rules.safety`);
- the console is not read: `read`/`readline` get CLIPS's EOF at once (a `clips_console.Console` whose
  input is empty), and a refusal after such a read is not reported; printed text is captured and dropped;
- a time limit and a memory limit through the watchdog `kb run` uses (`clips_halt`); past either,
  the check stops without an error (a large knowledge base may load within `kb run`'s limits);
- registered Python functions are replaced by stand-ins that return nil: the caller's code is never
  called; a refusal after a stand-in ran is not reported (the real function may have answered otherwise).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from rules.errors import Diagnostic
from rules.safety import UNSAFE_FUNCTIONS

from .clips_console import Console
from .clips_runner import ClipsRunner
from .errors import KnowledgeBaseLoadError

LOAD_CHECK_TIMEOUT_S = 10.0  # seconds the throw-away load may take before the check gives up (no error)
LOAD_CHECK_MEMORY = 512 << 20  # bytes CLIPS may hold while loading before the check gives up (no error)

# a call of an unsafe function: `(` then the name, ended as CLIPS's scanner ends a symbol
_NAMES = "|".join(re.escape(n) for n in sorted(UNSAFE_FUNCTIONS, key=len, reverse=True))
_UNSAFE_CALL = re.compile(r"\(\s*(?:" + _NAMES + r')(?=[\s()"&|~;<]|$)')


def clips_refusals(
    sources: Sequence[tuple[str, str]],
    *,
    functions: Iterable[str] = (),
    allow_unsafe: bool = False,
    timeout: float = LOAD_CHECK_TIMEOUT_S,
    memory_limit: int = LOAD_CHECK_MEMORY,
) -> list[Diagnostic]:
    """Load `(filename, text)` sources, already validated by `rules`, into a throw-away CLIPS environment.

    Args:
        functions: names of the Python functions `kb run` would register (stand-ins are registered).
        allow_unsafe: whether the text may call unsafe functions; when it does, nothing is loaded.
        timeout: seconds (wall clock) loading may take; memory_limit: bytes CLIPS may hold.

    Returns:
        [] when CLIPS builds every construct (or the check could not decide: see the module's notes),
        else one error diagnostic at the start of the first construct CLIPS refused:
        `file:line:col: CLIPS refused this <construct>: [CODE] message ERROR: <CLIPS's echo>`.
    """
    if allow_unsafe and any(_UNSAFE_CALL.search(text) for _, text in sources):
        return []
    called: list[str] = []

    def stand_in(name: str) -> Any:
        def call(*_: Any) -> None:
            called.append(name)

        return call

    def no_input() -> None:
        called.append("stdin")

    runner = None
    try:
        runner = ClipsRunner(
            sources,
            {name: stand_in(name) for name in functions},
            trace_firings=False,
            trace_facts=False,
            build_timeout=timeout,
            build_memory_limit=memory_limit,
            console=Console(input=no_input),
        )
    except KnowledgeBaseLoadError as exc:
        if exc.halted or called or exc.line is None:  # undecided (a stand-in answered); or text `rules` refuses
            return []
        return [Diagnostic(str(exc.file), exc.line, exc.column or 1, exc.reason)]
    finally:
        if runner is not None:
            runner.close()
    return []
