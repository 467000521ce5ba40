"""A model's non-finite outputs have the JSON spelling of every other surface (checked by r12 against a
report that pipeline predicts wrote them as null while KServe /v2 wrote "NaN"/"Infinity"): the strings
"NaN" and "Infinity", in a predict answer (one input and a batch; a fact slot mapped from the output, the
output tensor itself and one element of it) and in /v2 infer alike. Fixed for rule values in q12
(test_nonfinite_json_q12.py); this pins the model-output path. Over a real uvicorn server."""

from __future__ import annotations

import sys
from pathlib import Path

import httpx
import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "api"))
from api_live import make_settings, serve  # noqa: E402
from nonfinite_cases import strict_json  # noqa: E402

PIPELINE = """
name: nonfinite_model
nodes:
  - id: i
    type: input
    schema: {type: object, required: [x]}
  - id: m
    type: model
    model: nonfinite
    inputs: {x: "[input.x, input.x]"}
    facts:
      - template: out
        slots: {a: "output_0[0]", b: "output_0[1]"}
  - id: o
    type: output
    fields: {a: "out.a", b: "out.b", raw: "m.output_0", first: "m.output_0[0]"}
edges:
  - {from: i, to: m}
  - {from: m, to: o}
"""
WANT = {"a": "NaN", "b": "Infinity", "raw": ["NaN", "Infinity"], "first": "NaN"}


class NonFinite(torch.nn.Module):
    """x float32 [batch, 2] -> [NaN, +inf] per row (for positive x)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.stack([x[:, 0] * 0.0 / 0.0, x[:, 1] / 0.0], dim=-1)


def test_model_outputs_that_are_not_finite_read_as_strings_everywhere(tmp_path: Path) -> None:
    from workbench import Workbench
    from workbench.serving import Serving

    (tmp_path / "kb").mkdir()
    (tmp_path / "pipes").mkdir()
    (tmp_path / "pipes" / "nonfinite_model.yaml").write_text(PIPELINE)
    settings = make_settings(tmp_path)
    with Workbench(
        settings, knowledge_base_dir=tmp_path / "kb", pipeline_dir=tmp_path / "pipes", model_catalog=tmp_path / "n.yaml"
    ) as wb:
        wb.register_model("nonfinite", NonFinite(), example_inputs={"x": np.ones((1, 2), np.float32)})
        live = serve(Serving(wb, settings=settings, load_models=False, serve_demo_lm=False), settings)
        try:
            url = live.url + "/v1/pipelines/nonfinite_model/predict"
            one = httpx.post(url, json={"input": {"x": 1.0}}, timeout=60)
            batch = httpx.post(url, json={"inputs": [{"x": 1.0}, {"x": 2.0}]}, timeout=60)
            body = {"inputs": [{"name": "x", "shape": [1, 2], "datatype": "FP32", "data": [1, 1]}]}
            v2 = httpx.post(live.url + "/v2/models/nonfinite/infer", json=body, timeout=60)
        finally:
            live.stop()
    assert one.status_code == 200, one.text
    assert strict_json(one.text)["outputs"] == WANT
    assert batch.status_code == 200, batch.text
    assert [r["outputs"] for r in strict_json(batch.text)["results"]] == [WANT, WANT]
    assert v2.status_code == 200, v2.text
    assert strict_json(v2.text)["outputs"][0]["data"] == ["NaN", "Infinity"]
