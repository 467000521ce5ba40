"""Ask screen over a model-backed relation (`;@model`, issue 18 item 8): the model answers, in one
predict call for every pending question, and the person is never asked."""

from __future__ import annotations

import numpy as np
import torch

from tui.app import WorkbenchApp
from tui.messages import ConsultationFinished
from tui.screens.ask import AskScreen

RISK_KB = """
;@model risk-net input.features=features labels=low,high threshold=0.6
(deftemplate risk (slot applicant) (multislot features) (slot level))
(deftemplate applicant (slot name) (multislot features))

(deffacts applicants
   (applicant (name ann) (features 3.0 1.0)) (applicant (name bob) (features 1.0 3.0))
   (applicant (name cy) (features 2.0 0.5)) (applicant (name dee) (features 0.0 2.0)))

(defrule approve
   (applicant (name ?n) (features $?f))
   (risk (applicant ?n) (features $?f) (level low))
   =>
   (assert (approved ?n)))
"""


class RiskNet(torch.nn.Module):
    """Logits [low, high]: high when the second feature exceeds the first; records its batch sizes."""

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[int] = []

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        self.batches.append(int(features.shape[0]))
        d = features[:, 1] - features[:, 0]
        return torch.stack([-d, d], dim=-1) * 4.0


class RecordingApp(WorkbenchApp):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.finished: list[ConsultationFinished] = []
        self.questions: list[str] = []

    def on_consultation_finished(self, message: ConsultationFinished) -> None:
        self.finished.append(message)


async def test_ask_answers_a_model_backed_relation_without_asking_the_person(workspace, workbench, backend, helpers):
    (workspace / "knowledge_bases" / "risk.clp").write_text(RISK_KB)
    model = RiskNet()
    workbench.register_model("risk-net", model, example_inputs={"features": np.zeros((1, 2), np.float32)})
    model.batches.clear()
    app = RecordingApp(backend, mode="ask")
    async with app.run_test(size=helpers.SIZE) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, AskScreen)
        await pilot.press("ctrl+r")
        await pilot.pause()
        dialog = app.screen
        dialog.query_one("#facts-kb").value = "risk"
        dialog.query_one("#facts-goal").value = "(approved ?n)"
        dialog.query_one("#facts-all").value = True
        await pilot.press("ctrl+r")

        def done() -> bool:
            if screen.question is not None:
                app.questions.append(screen.question.text)
            return bool(app.finished) or bool(app.questions)

        await helpers.wait_until(pilot, done, what="the consultation's end")
        assert app.questions == []  # nobody was asked: the model answered
        result = app.finished[-1].result
        assert {a["bindings"]["n"] for a in result["answers"]} == {"ann", "cy"}
        assert model.batches == [4]  # four questions, one predict call
