"""`workbench.consultation`: interactive asks on one loop thread — questions, answers as proven,
first answer vs all, cancel, limits, and the asyncio wait the API uses."""

from __future__ import annotations

import asyncio

import pytest

from workbench.consultation import (
    ConsultationError,
    ConsultationNotFoundError,
    Consultations,
    TooManyConsultationsError,
    how_lines,
)

TRAITS = """;@askable
;@question "Does it have ?feature?"
(deftemplate has (slot feature) (slot answer (allowed-symbols yes no)))
(deftemplate trait (slot name))
(defrule swims (has (feature fins) (answer yes)) => (assert (trait (name swimmer))))
(defrule flies (has (feature wings) (answer yes)) => (assert (trait (name flyer))))
(defrule walks (has (feature fins) (answer yes)) (has (feature wings) (answer yes)) => (assert (trait (name odd))))
"""


@pytest.fixture
def registry(tmp_path):
    from workbench import Workbench

    (tmp_path / "kb").mkdir()
    (tmp_path / "kb" / "traits.clp").write_text(TRAITS)
    wb = Workbench(knowledge_base_dir=tmp_path / "kb", pipeline_dir=tmp_path / "p", model_catalog=tmp_path / "c.yaml")
    reg = Consultations(wb, max_open=2)
    yield reg
    reg.close()
    wb.close()


def test_first_answer_only_by_default(registry):
    c = registry.start("traits", "(trait (name ?n))")
    assert c.state == "asking" and c.question.fact == "(has (feature fins))"
    assert c.question.choices == ["yes", "no", "unknown"]
    with pytest.raises(ConsultationError, match="answer one of"):
        c.answer("maybe")
    c.answer("yes")
    doc = c.wait_for_person(30)
    assert doc["state"] == "finished" and [a["bindings"] for a in doc["answers"]] == [{"n": "swimmer"}]
    assert doc["transcript"] == [{"question": "Does it have fins?", "answer": "yes"}]
    assert how_lines(doc["answers"][0]["proof"])[0].startswith("(trait (name swimmer))  by rule swims")
    with pytest.raises(ConsultationError, match="no open question"):
        c.answer("yes")


def test_all_answers_arrive_as_proven_and_no_question_is_asked_twice(registry):
    c = registry.start("traits", "(trait (name ?n))", all_answers=True)
    c.answer("yes")  # fins
    doc = c.wait_for_person(30)
    assert doc["state"] == "asking" and doc["question"]["fact"] == "(has (feature wings))"
    assert [a["bindings"] for a in doc["answers"]] == [{"n": "swimmer"}]  # shown before the next question
    c.answer("yes")
    doc = c.wait_for_person(30)
    assert doc["state"] == "finished"
    assert [a["bindings"] for a in doc["answers"]] == [{"n": "swimmer"}, {"n": "flyer"}, {"n": "odd"}]
    assert [t["question"] for t in doc["transcript"]] == ["Does it have fins?", "Does it have wings?"]


def test_cancel_limits_and_unknown_ids(registry):
    a = registry.start("traits", "(trait (name ?n))")
    b = registry.start("traits", "(trait (name ?n))")
    with pytest.raises(TooManyConsultationsError, match="at most 2"):
        registry.start("traits", "(trait (name ?n))")
    a.cancel()
    assert a.snapshot()["state"] == "cancelled" and a.snapshot()["question"] is None
    registry.start("traits", "(trait (name ?n))")  # the cancelled one is forgotten to make room
    with pytest.raises(ConsultationNotFoundError):
        registry.get(a.id)
    registry.delete(b.id)
    with pytest.raises(ConsultationNotFoundError):
        registry.delete(b.id)
    bad = registry.start("traits", "(trait")
    assert bad.state == "failed" and "GoalSyntaxError" in bad.error


def test_wait_async_holds_no_thread(registry):
    c = registry.start("traits", "(trait (name ?n))", wait=False)

    async def main():
        doc = await c.wait_async(None, 30)
        assert doc["state"] == "asking"
        c.answer("no")
        rev = doc["revision"]
        doc = await c.wait_async(rev, 30)
        assert doc["revision"] > rev

    asyncio.run(main())
