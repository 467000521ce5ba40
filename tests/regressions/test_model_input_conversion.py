"""Regression (issue 20, shared/cases/newcomer): JSON values become the model's dtype inside a
pipeline; one that cannot (1.5 for an int64 input) is refused as bad input naming the node and the
model input (422 over HTTP), and nothing is recorded. Before: integer pixels crashed demo_digits
with `dtype int64; expected float32` (a failed run, HTTP 500)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from workbench import Pipeline, Workbench
from workbench.pipeline import InputValidationError


class Counter(torch.nn.Module):
    """counts: int64 [batch, 3] -> total: float32 [batch] (sum)."""

    def forward(self, counts: torch.Tensor) -> torch.Tensor:
        return counts.sum(-1).float()


def _pipeline() -> Pipeline:
    p = Pipeline("count")
    p.add_node("req", "input", schema={"type": "object", "properties": {"counts": {"type": "array"}}})
    p.add_node("m", "model", model="counter", inputs={"counts": "input.counts"})
    p.add_node("out", "output", fields={"total": "m.output_0"})
    p.connect("req", "m")
    p.connect("m", "out")
    return p


@pytest.fixture()
def wb(tmp_path):
    with Workbench(
        knowledge_base_dir=tmp_path, pipeline_dir=tmp_path / "pipelines", model_catalog=tmp_path / "none.yaml"
    ) as wb:
        wb.register_model("counter", Counter(), example_inputs={"counts": np.zeros((1, 3), dtype=np.int64)})
        yield wb


async def test_whole_numbers_become_integers(wb):
    result = await wb.run(_pipeline(), {"counts": [1.0, 2, 3.0]})
    assert result.status == "succeeded", result.error
    assert result.outputs["total"] == pytest.approx(6.0)


async def test_a_fraction_for_an_integer_input_is_bad_input_and_not_recorded(wb):
    before = len(wb.list_runs())
    with pytest.raises(InputValidationError) as err:
        await wb.run(_pipeline(), {"counts": [1.5, 2, 3]})
    assert err.value.node == "m" and err.value.field == "inputs.counts"
    assert "input 'counts': values are not whole numbers; expected INT64 (int64)" in str(err.value)
    assert len(wb.list_runs()) == before
