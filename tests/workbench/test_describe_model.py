"""`wb.describe_model(NAME)` and `workbench model info NAME` show the names pipelines use for a
model's inputs and outputs, with shapes and dtypes (issue 20: output names appeared only in a
validation error; `model info` did not know the pipelines' catalogue models)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from cli.app import app
from workbench import Workbench
from workbench.pipeline import NotFoundError


class TwoHeads(torch.nn.Module):
    def forward(self, features: torch.Tensor):
        return torch.sigmoid(features.sum(-1)), features * 2


def test_describe_a_registered_module(tmp_path):
    with Workbench(knowledge_base_dir=tmp_path, pipeline_dir=tmp_path / "p", model_catalog=tmp_path / "n.yaml") as wb:
        wb.register_model("heads", TwoHeads(), example_inputs={"features": np.zeros((1, 3), np.float32)})
        doc = wb.describe_model("heads")
        with pytest.raises(NotFoundError, match="known models"):
            wb.describe_model("nope")
    sig = doc["signature"]
    assert sig["inputs"] == [{"name": "features", "datatype": "float32", "shape": [-1, 3]}]
    assert [(o["name"], o["shape"]) for o in sig["outputs"]] == [("output_0", [-1]), ("output_1", [-1, 3])]


def test_model_info_knows_the_pipeline_catalogue():
    r = CliRunner().invoke(app, ["model", "info", "demo-digits", "--json"])
    assert r.exit_code == 0, r.output
    sig = json.loads(r.stdout)["signature"]
    assert sig["inputs"][0]["name"] == "pixels" and sig["outputs"][0]["name"] == "logits"
    missing = CliRunner().invoke(app, ["model", "info", "no-such-model"])
    assert missing.exit_code == 1 and "demo-digits" in missing.output
    listed = CliRunner().invoke(app, ["model", "list", "--json"])
    assert {"demo-digits", "demo-intent-router", "all-MiniLM-L6-v2"} <= {m["name"] for m in json.loads(listed.stdout)}
