"""A model node whose request passes its deadline fails with a message that names the model once and
says the deadline (it read "model 'slow': model 'slow': request timed out after 0.050 s ...")."""

from __future__ import annotations

import threading

import torch

from neural import Signature, TensorSpec
from workbench.pipeline import Pipeline

SIG = Signature((TensorSpec("x", "float32", (-1, 4)),), (TensorSpec("y", "float32", (-1, 1)),))

DOC = """
name: deadline
nodes:
  - id: request
    type: input
    schema: {type: object, required: [x], properties: {x: {type: array, items: {type: number}}}}
  - id: score
    type: model
    model: slow
    inputs: {x: "input.x"}
    timeout_s: 0.05
  - id: result
    type: output
    fields: {n: "len(input.x)"}
edges:
  - {from: request, to: score}
  - {from: score, to: result}
"""


class Held(torch.nn.Module):
    """Answers only once `gate` is set: every request to it passes a short deadline."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.gate.wait(10)
        return x.sum(1, keepdim=True)


def test_a_model_timeout_names_the_model_once_and_its_deadline(tmp_path):
    from workbench import Workbench
    from workbench.config import load_settings

    settings = load_settings(database_url=f"sqlite:///{tmp_path / 'runs.sqlite3'}")
    (tmp_path / "kb").mkdir()
    (tmp_path / "pipelines").mkdir()
    model = Held()
    with Workbench(settings, knowledge_base_dir=tmp_path / "kb", pipeline_dir=tmp_path / "pipelines") as wb:
        wb.catalog.register_module("slow", model, signature=SIG)
        try:
            res = wb.run_sync(Pipeline.from_yaml(DOC), {"x": [1, 2, 3, 4]})
        finally:
            model.gate.set()
    assert res.status == "failed" and res.failed_node == "score"
    assert res.error.count("'slow'") == 1, res.error
    assert "timed out" in res.error and "deadline, 0.05 s after submission" in res.error, res.error
