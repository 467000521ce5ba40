"""Smallest inputs of bugs fixed in the backward prover."""

from __future__ import annotations

import rules
from chaining.backward import Session


def test_template_goal_without_slots_matches_every_fact() -> None:
    # `(item)` on a template with slots was read as an ordered pattern and matched nothing
    kb = rules.knowledge_base_from_text("t", "(deftemplate item (slot n))\n(deffacts f (item (n 1)) (item (n 2)))")
    assert len(Session(kb).prove_sync("(item)").answers) == 2


def test_goal_without_variables_keeps_distinct_facts() -> None:
    # answers were de-duplicated by bindings only, so a variable-free goal returned one fact
    kb = rules.knowledge_base_from_text(
        "t", "(deftemplate item (slot n) (slot k))\n(deffacts f (item (n 1) (k a)) (item (n 1) (k b)))"
    )
    assert len(Session(kb).prove_sync("(item (n 1))").answers) == 2


def test_json_string_with_spaces_stays_one_field() -> None:
    # a JSON string with spaces became a symbol and was asserted as several fields
    kb = rules.knowledge_base_from_text("t", "(defrule r (review ?id ?text) => (assert (seen ?id)))")
    s = Session(kb, facts=[{"template": "review", "values": ["r1", "a good film"]}])
    assert s.prove_sync("(seen r1)").answers


def test_deep_chain_does_not_hit_python_recursion_limit() -> None:
    # nested async generators need ~8 frames per subgoal; 150 levels overflowed the default limit
    chain = " ".join(f"(link {i} {i + 1})" for i in range(150))
    kb = rules.knowledge_base_from_text(
        "deep", f"(deffacts c {chain} (end 150))\n(defrule back (link ?x ?y) (end ?y) => (assert (end ?x)))"
    )
    assert Session(kb).prove_sync("(end 0)").answers
