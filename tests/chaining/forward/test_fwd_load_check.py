"""`kb check` refuses what real CLIPS refuses when it loads a file (clipspy is the oracle), through
the project's checker or, where it misses a check, the throw-away load (`chaining.forward.load_check`);
and that load runs nothing with effects outside CLIPS, never reads the console and is bounded."""

from __future__ import annotations

import time
from pathlib import Path

import clips
import pytest

from chaining.forward.constructs import split_constructs
from chaining.forward.load_check import clips_refusals
from cli.kb_check_fast import run_check

# Files `kb check` passed (rc 0) and CLIPS refuses (a newcomer's finding): name -> (text, CLIPS's code).
CASES = {
    "a14": ("(defrule r (declare (auto-focus TRUE) (salience 5) (salience 6)) => )\n", "PRNTUTIL5"),
    "c1": ("(defrule r (declare (salience 5) (auto-focus TRUE) (auto-focus FALSE)) => )\n", "PRNTUTIL5"),
    "c15": (
        "(defrule r (a ?x) => (foreach ?i (create$ 1 2) (printout t ?i ?i-index crlf)) (printout t ?i crlf))\n",
        "PRCCODE3",
    ),
    "c16": ("(deffunction f (?a ?a) ?a)\n", "PRCCODE7"),
    "c6": ("(deftemplate t (slot a (type INTEGER) (allowed-symbols x)))\n", "CSTRNPSR1"),
    "a21": (
        "(defmodule MAIN (export ?ALL))\n(deftemplate MAIN::foo (slot a))\n"
        "(defmodule X (import MAIN deftemplate foo bar))\n",
        "MODULPSR1",
    ),
    "a20": (
        "(defmodule MAIN (export ?ALL))\n(defmodule X (import MAIN ?ALL) (import MAIN deftemplate foo))\n"
        "(deftemplate MAIN::foo (slot a))\n",
        "MODULPSR1",
    ),
}
BACKSTOP_ONLY = ("c6", "a21", "a20")  # the checker itself does not know these; the throw-away load does


def _refused_span(text: str) -> tuple[int, int, str]:
    """(first line, last line, CLIPS's message) of the construct real CLIPS refuses, built as `kb run` builds."""
    env = clips.Environment()
    for c in split_constructs(text):
        try:
            env.build(c.text)
        except clips.CLIPSError as exc:
            return c.line, c.line + c.text.count("\n"), str(exc)
    raise AssertionError(f"CLIPS loads {text!r}")


@pytest.mark.parametrize("name", sorted(CASES))
def test_kb_check_refuses_what_clips_refuses(name, tmp_path, capsys) -> None:
    text, code = CASES[name]
    path = tmp_path / f"{name}.clp"
    path.write_text(text)
    with pytest.raises(clips.CLIPSError):
        clips.Environment().load(str(path))
    first, last, message = _refused_span(text)
    assert code in message
    assert run_check([path], allow_unsafe=False, as_json=False, strict=False) == 1
    out = capsys.readouterr().out.splitlines()
    file, line, column, _ = out[0].split(":", 3)
    assert file == str(path) and first <= int(line) <= last and int(column) >= 1, out
    assert code in out[0] or name not in BACKSTOP_ONLY


@pytest.mark.parametrize("name", BACKSTOP_ONLY)
def test_the_throw_away_load_names_the_construct_and_clips_message(name) -> None:
    text, code = CASES[name]
    found = clips_refusals([(f"{name}.clp", text)])
    first, _, _ = _refused_span(text)
    assert len(found) == 1
    d = found[0]
    assert (d.file, d.line, d.column, d.severity) == (f"{name}.clp", first, 1, "error")
    assert d.message.startswith(f"CLIPS refused this {'deftemplate' if name == 'c6' else 'defmodule'}: [{code}]")


def test_shipped_knowledge_bases_load() -> None:
    root = Path(__file__).resolve().parents[3] / "knowledge_bases"
    for path in sorted(root.glob("*.clp")):
        assert clips_refusals([(str(path), path.read_text())], allow_unsafe=True) == [], path


def test_a_console_read_at_load_is_not_read_and_not_refused() -> None:
    # `kb run` with a console would read the answer here; the check gives CLIPS EOF and decides nothing after it
    text = "(defglobal ?*n* = (read))\n(defglobal ?*m* = (+ ?*n* 1))\n"
    assert clips_refusals([("ask.clp", text)]) == []


def test_python_functions_are_replaced_by_stand_ins() -> None:
    bad = "(deftemplate t (slot a (type INTEGER) (allowed-symbols x)))\n"
    at_load = "(defglobal ?*s* = (score 1))\n(defglobal ?*t* = (+ ?*s* 1))\n"  # nil + 1: refused after `score` ran
    assert clips_refusals([("f.clp", at_load + bad)], functions=["score"]) == []  # a stand-in answered: undecided
    found = clips_refusals([("f.clp", "(defrule r (a ?x) => (score ?x))\n" + bad)], functions=["score"])
    assert [(d.line, d.message.split(":")[0]) for d in found] == [(2, "CLIPS refused this deftemplate")]


def test_a_load_that_never_ends_is_stopped_without_an_error() -> None:
    text = "(defglobal ?*x* = (while TRUE do (+ 1 1)))\n(deftemplate t (slot a (type INTEGER) (allowed-symbols x)))\n"
    t0 = time.perf_counter()
    assert clips_refusals([("loop.clp", text)], timeout=0.3) == []
    assert time.perf_counter() - t0 < 30  # the watchdog halted it (it would never return)


def test_nothing_is_loaded_when_unsafe_functions_are_allowed_and_called(tmp_path) -> None:
    marker = tmp_path / "ran"
    text = f'(defglobal ?*x* = (system "touch {marker}"))\n(deffunction f (?a ?a) ?a)\n'
    assert clips_refusals([("sys.clp", text)], allow_unsafe=True) == []
    assert not marker.exists()
    safe = "(deftemplate t (slot a (type INTEGER) (allowed-symbols x)))\n"
    assert clips_refusals([("safe.clp", safe)], allow_unsafe=True)  # allowed but not called: loaded and refused
