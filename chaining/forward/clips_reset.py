"""Every evaluation on a pooled CLIPS environment behaves as on a freshly loaded one.

`(reset)` empties working memory and the agenda, deletes instances (and makes the definstances
again), re-asserts the deffacts, clears the focus stack and, while `set-reset-globals` is TRUE,
gives the defglobals their initial values. What it leaves alone is environment state that a
right-hand side can change, and that would leak into the next evaluation of a pooled
environment (a rule calling `(set-reset-globals FALSE)` made a global count 1, 2, 3 across
separate API calls). Two remedies, by cost:

- restored before every reset (a few C calls): `set-reset-globals`, `set-salience-evaluation`,
  `set-fact-duplication`, the conflict-resolution strategy (`ClipsRunner` sets it per
  evaluation), the current module, and the gensym counter (`setgen`) when the knowledge base
  calls `gensym`/`gensym*`/`setgen`;
- rebuilt (the environment is dropped after the evaluation and the pool builds a new one):
  when the knowledge base's text calls a function that changes state no cheap call restores:
  watch items (`watch`, `unwatch`: the trace would enter the program's output), breakpoints,
  construct deletion (`undefrule`...), `set-sequence-operator-recognition`,
  `set-dynamic-constraint-checking`, `set-incremental-reset`, `set-class-defaults-mode`.

What is called is found in the rule files' text (`REBUILD_FUNCTIONS`, `RESTORE_FUNCTIONS`): a
name inside a string or a comment only makes the engine more careful, never less.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from clips._clips import ffi, lib

#: Functions whose effect on the environment survives `(reset)` and has no cheap restoration.
REBUILD_FUNCTIONS = frozenset(
    {
        "watch",
        "unwatch",
        "set-break",
        "undefrule",
        "undeftemplate",
        "undeffacts",
        "undefglobal",
        "undeffunction",
        "undefgeneric",
        "undefmethod",
        "undefclass",
        "undefinstances",
        "undefmessage-handler",
        "set-sequence-operator-recognition",
        "set-dynamic-constraint-checking",
        "set-incremental-reset",
        "set-class-defaults-mode",
    }
)
#: Functions whose state is restored before each reset only when the knowledge base calls them.
RESTORE_FUNCTIONS = frozenset({"gensym", "gensym*", "setgen"})

_CALL = re.compile(r"\(\s*([^\s()\";&|~<>]+)")


def called_functions(texts: Iterable[str], names: frozenset[str]) -> set[str]:
    """The members of `names` that appear in call position `(name ...` in any of `texts`."""
    found: set[str] = set()
    for text in texts:
        for m in _CALL.finditer(text):
            name = m.group(1)
            if name in names:
                found.add(name)
    return found


class EnvironmentState:
    """The settings of one CLIPS environment as they were after loading, restored on demand.

    Args:
        env: clipspy's `Environment._env`, with the knowledge base built.
        texts: the knowledge base's source texts (to see which functions it calls).

    Attributes:
        needs_rebuild: the knowledge base calls a function in `REBUILD_FUNCTIONS`: an environment
            it ran in must not be reused (`ForwardEngine` builds a new one).
        rebuild_reason: those functions, for the documentation of a slow path.
    """

    __slots__ = (
        "_env",
        "reset_globals",
        "salience_evaluation",
        "fact_duplication",
        "module",
        "_gensym",
        "needs_rebuild",
        "rebuild_reason",
    )

    def __init__(self, env: Any, texts: Iterable[str]):
        texts = list(texts)
        self._env = env
        self.reset_globals = bool(lib.GetResetGlobals(env))
        self.salience_evaluation = int(lib.GetSalienceEvaluation(env))
        self.fact_duplication = bool(lib.GetFactDuplication(env))
        self.module = lib.GetCurrentModule(env)
        rebuild = called_functions(texts, REBUILD_FUNCTIONS)
        self.needs_rebuild = bool(rebuild)
        self.rebuild_reason = sorted(rebuild)
        self._gensym = bool(called_functions(texts, RESTORE_FUNCTIONS))

    def restore(self) -> None:
        """Put back what a previous evaluation's rules may have changed (call before `Reset`)."""
        env = self._env
        if bool(lib.GetResetGlobals(env)) != self.reset_globals:
            lib.SetResetGlobals(env, self.reset_globals)
        if int(lib.GetSalienceEvaluation(env)) != self.salience_evaluation:
            lib.SetSalienceEvaluation(env, self.salience_evaluation)
        if bool(lib.GetFactDuplication(env)) != self.fact_duplication:
            lib.SetFactDuplication(env, self.fact_duplication)
        if lib.GetCurrentModule(env) != self.module and self.module != ffi.NULL:
            lib.SetCurrentModule(env, self.module)
        if self._gensym:
            _eval(env, "(setgen 1)")


def _eval(env: Any, text: str) -> None:
    cv = ffi.new("CLIPSValue *")
    lib.Eval(env, text.encode(), cv)
