"""`kb check` knew module visibility for deftemplates only: a deffunction, defgeneric or defglobal of
another module that the rule's module does not import passed the check (CLIPS refuses the file with
`[EXPRNPSR3]` / `[GLOBLPSR1]`), a construct named like one the module imports was no error (CLIPS:
`[CSTRCPSR3]` import/export conflict), and a template re-exported by an importing module (A -> B -> C)
was reported unknown in C although CLIPS loads it. clipspy is the oracle: the checker must accept
exactly what CLIPS loads."""

from __future__ import annotations

import clips
import pytest

from rules import check_sources

CASES = {
    # refused by CLIPS, accepted by the checker before
    "global-not-exported": "(defmodule MAIN (export deftemplate ?ALL)) (deftemplate o (slot id)) (defglobal ?*n* = 0)"
    " (defmodule C (import MAIN deftemplate ?ALL)) (defrule C::r (o (id ?i)) => (bind ?*n* (+ ?*n* 1)))",
    "global-of-other-module": "(defmodule A) (defglobal A ?*g* = 1) (defmodule B) (deffunction B::f () ?*g*)",
    "global-not-named-in-export": "(defmodule A (export defglobal g)) (defglobal A ?*g* = 1 ?*h* = 2)"
    " (defmodule B (import A defglobal g)) (deffunction B::f () ?*h*)",
    "global-of-main-in-module": "(defglobal ?*g* = 1) (defmodule B) (defrule B::r => (printout t ?*g* crlf))",
    "function-not-named-in-export": "(defmodule A (export deffunction dbl)) (deffunction A::dbl (?x) (* 2 ?x))"
    " (deffunction A::tri (?x) (* 3 ?x)) (defmodule B (import A deffunction dbl)) (defrule B::r => (tri 1))",
    "function-of-main-in-module": "(deffunction f () 1) (defmodule B) (defrule B::r => (f))",
    "function-qualified-not-imported": "(defmodule A (export ?ALL)) (deffunction A::f () 1) (defmodule B)"
    " (defrule B::r => (A::f))",
    "function-templates-only-exported": "(defmodule A (export deftemplate ?ALL)) (deffunction A::f () 1)"
    " (defmodule B (import A ?ALL)) (defrule B::r => (f))",
    "generic-not-imported": "(defmodule A (export ?ALL)) (defgeneric A::gg) (defmethod A::gg ((?x INTEGER)) 1)"
    " (defmodule B) (defrule B::r => (gg 1))",
    "function-conflict": "(defmodule A (export ?ALL)) (deffunction A::f () 1) (defmodule B (import A ?ALL))"
    " (deffunction B::f () 2)",
    "global-conflict": "(defmodule A (export ?ALL)) (defglobal A ?*g* = 1) (defmodule B (import A ?ALL))"
    " (defglobal B ?*g* = 2)",
    "template-conflict": "(defmodule A (export ?ALL)) (deftemplate A::t (slot x)) (defmodule B (import A ?ALL))"
    " (deftemplate B::t (slot y))",
    "method-conflict": "(defmodule A (export ?ALL)) (defgeneric A::gg) (defmethod A::gg ((?x INTEGER)) 1)"
    " (defmodule B (import A ?ALL)) (defmethod B::gg ((?x FLOAT)) 2)",
    # loaded by CLIPS
    "global-imported": "(defmodule A (export ?ALL)) (defglobal A ?*g* = 1) (defmodule B (import A ?ALL))"
    " (defrule B::r => (printout t ?*g* crlf))",
    "global-defined-after-import": "(defmodule A (export ?ALL)) (defmodule B (import A ?ALL)) (defglobal A ?*g* = 1)"
    " (defrule B::r => (printout t ?*g* crlf))",
    "function-defined-after-import": "(defmodule A (export ?ALL)) (defmodule B (import A ?ALL))"
    " (deffunction A::f () 1) (defrule B::r => (f))",
    "generic-imported": "(defmodule A (export ?ALL)) (defgeneric A::gg) (defmethod A::gg ((?x INTEGER)) 1)"
    " (defmodule B (import A defgeneric ?ALL)) (defrule B::r => (gg 1))",
    "same-global-name-own-module": "(defglobal ?*g* = 1) (defmodule B) (defglobal B ?*g* = 2)"
    " (defrule B::r => (printout t ?*g* crlf))",
    "re-exported-template": "(defmodule A (export ?ALL)) (deftemplate A::t (slot x)) (defmodule B (import A ?ALL)"
    " (export ?ALL)) (defmodule C (import B ?ALL)) (defrule C::r (t (x 1)) => )",
    "re-exported-everything": "(defmodule A (export ?ALL)) (deffunction A::f () 1) (deftemplate A::t (slot x))"
    " (defglobal A ?*g* = 1) (defmodule B (import A ?ALL) (export ?ALL)) (defmodule C (import B ?ALL))"
    " (defrule C::r (t (x 1)) => (f) (printout t ?*g* crlf))",
}


def clips_loads(text: str, tmp_path) -> bool:
    path = tmp_path / "m.clp"
    path.write_text(text)
    env = clips.Environment()
    try:
        env.load(str(path))
    except clips.CLIPSError:
        return False
    return True


@pytest.mark.parametrize("name", sorted(CASES))
def test_checker_agrees_with_clips_on_module_visibility(name: str, tmp_path) -> None:
    text = CASES[name]
    diagnostics = check_sources([("m.clp", text)])
    assert (not diagnostics) == clips_loads(text, tmp_path), [str(d) for d in diagnostics]


def test_messages_say_which_module_defines_the_hidden_construct() -> None:
    (d,) = check_sources([("m.clp", CASES["global-of-other-module"])])
    assert "?*g*" in d.message and "module A defines it, but module B does not see it" in d.message
    (d,) = check_sources([("m.clp", CASES["function-of-main-in-module"])])
    assert d.message.startswith("undefined function 'f'; module MAIN defines it, but module B does not see it")
    (d,) = check_sources([("m.clp", CASES["function-conflict"])])
    assert d.message.startswith("[CSTRCPSR3] Cannot define deffunction 'f' because of an import/export conflict")
    assert (d.line, d.column) == (1, 83)
