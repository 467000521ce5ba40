"""Ask screen: a backward-chaining consultation answered by the person, with WHY and HOW."""

from __future__ import annotations

from textual.widgets import Input, RichLog

from tui.app import WorkbenchApp
from tui.messages import ConsultationFinished
from tui.screens.ask import AskScreen


class RecordingApp(WorkbenchApp):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.finished: list[ConsultationFinished] = []

    def on_consultation_finished(self, message: ConsultationFinished) -> None:
        self.finished.append(message)


def transcript(screen) -> str:
    return "\n".join(line.text for line in screen.query_one(RichLog).lines)


async def answer(pilot, text: str) -> None:
    await pilot.press(*text, "enter")
    await pilot.pause()


async def test_answer_a_consultation_using_why_and_how(backend, helpers):
    app = RecordingApp(backend, mode="ask")
    async with app.run_test(size=helpers.SIZE) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, AskScreen)
        await pilot.press("ctrl+r")
        await pilot.pause()
        dialog = app.screen
        dialog.query_one("#facts-kb", Input).value = "zoo"
        dialog.query_one("#facts-goal", Input).value = "(animal (kind ?k))"
        await pilot.press("ctrl+r")
        await helpers.wait_until(pilot, lambda: screen.question is not None, what="the first question")
        assert screen.question.text == "Does the animal have feathers?"
        assert screen.question.choices[:2] == ["yes", "no"]

        await answer(pilot, "maybe")  # not an allowed answer: refused, the question stays open
        assert screen.question is not None and any("answer one of" in n.message for n in app._notifications)
        await answer(pilot, "no")
        await helpers.wait_until(
            pilot, lambda: screen.question is not None and "fur" in screen.question.text, what="the question about fur"
        )
        await answer(pilot, "why")
        text = transcript(screen)
        assert "WHY is this asked?" in text
        assert "mammal" in text.split("WHY is this asked?")[-1]  # the chain names the rule being tried
        assert screen.question is not None  # WHY does not answer the question
        await answer(pilot, "yes")
        await helpers.wait_until(pilot, lambda: bool(app.finished), what="the conclusion")
        result = app.finished[-1].result
        assert [a["bindings"] for a in result["answers"]] == [{"k": "mammal"}]

        await answer(pilot, "how")
        how = transcript(screen).split("HOW answer 1 was proved:")[-1]
        assert "by rule mammal" in how
        assert "answered by person" in how and "fur" in how


async def test_an_answer_given_twice_answers_one_question(backend, helpers):
    """n11: "no" submitted twice before the next question appeared answered that next question too
    (the second answer waited in the queue); now it carries its question's number and goes nowhere."""
    app = RecordingApp(backend, mode="ask")
    async with app.run_test(size=helpers.SIZE) as pilot:
        await pilot.pause()
        screen = app.screen
        await pilot.press("ctrl+r")
        await pilot.pause()
        dialog = app.screen
        dialog.query_one("#facts-kb", Input).value = "zoo"
        dialog.query_one("#facts-goal", Input).value = "(animal (kind ?k))"
        await pilot.press("ctrl+r")
        await helpers.wait_until(pilot, lambda: screen.question is not None, what="the first question")
        assert screen.question.text == "Does the animal have feathers?"
        screen.answer("no")
        screen.answer("no")  # the same key again, before the worker took the first
        await helpers.wait_until(
            pilot, lambda: screen.question is not None and "fur" in screen.question.text, what="the question about fur"
        )
        await pilot.pause(0.3)
        assert screen.question is not None and "fur" in screen.question.text  # still open: not answered "no"
        state = backend.consultation(screen.consultation_id)
        assert [t["answer"] for t in state["transcript"]] == ["no"]
