"""`ForwardEngine.evaluate(templates=(...))` found only templates visible from MAIN: a template
defined in another module (`B::out`) was reported as `Fact(template='out')` among all facts, yet
`templates=("out",)` returned nothing."""

from __future__ import annotations

from chaining.forward import ForwardEngine

KB = """
(defmodule MAIN (export ?ALL))
(deftemplate MAIN::a (slot x))
(defmodule B (import MAIN ?ALL))
(deftemplate B::out (slot y))
(defrule MAIN::go (a (x ?x)) => (focus B))
(defrule B::mk (a (x ?x)) => (assert (out (y ?x))))
"""


def test_templates_filter_finds_templates_of_every_module():
    with ForwardEngine.from_sources([("m.clp", KB)]) as engine:
        everything = engine.evaluate([{"template": "a", "slots": {"x": 5}}])
        outs = [f for f in everything.facts if f.template == "out"]
        assert [f.slots for f in outs] == [{"y": 5}]
        assert engine.evaluate([{"template": "a", "slots": {"x": 5}}], templates=("out",)).facts == outs
        assert engine.evaluate([{"template": "a", "slots": {"x": 5}}], templates=("B::out",)).facts == outs
        assert [
            f.slots for f in engine.evaluate([{"template": "a", "slots": {"x": 5}}], templates=("a", "out")).facts
        ] == [{"x": 5}, {"y": 5}]
