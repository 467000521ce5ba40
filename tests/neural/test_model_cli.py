"""`workbench model list|info|export` (the fast paths; export numerics are covered in test_export.py)."""

from __future__ import annotations

import json

import numpy as np
import torch
from typer.testing import CliRunner

from cli.app import app
from neural import Signature, TensorSpec, save_torchscript

runner = CliRunner()


def test_model_list_shows_the_catalogue_without_loading():
    result = runner.invoke(app, ["model", "list", "--json"])
    assert result.exit_code == 0, result.output
    rows = {r["name"]: r for r in json.loads(result.output)}
    assert rows["all-MiniLM-L6-v2"]["task"] == "embedding" and len(rows["all-MiniLM-L6-v2"]["weights_version"]) == 12
    assert rows["all-MiniLM-L6-v2-onnx"]["format"] == "onnx"


def test_model_info_unknown_name_is_a_clear_error():
    result = runner.invoke(app, ["model", "info", "no-such-model"])
    assert result.exit_code == 1
    assert "no model named 'no-such-model'" in result.output and "all-MiniLM-L6-v2" in result.output


def test_model_info_and_export_of_a_torchscript_file(tmp_path):
    torch.manual_seed(0)
    sig = Signature((TensorSpec("x", "float32", (-1, 4)),), (TensorSpec("y", "float32", (-1, 2)),))
    path = tmp_path / "mlp.pt"
    save_torchscript(torch.jit.script(torch.nn.Sequential(torch.nn.Linear(4, 2), torch.nn.Sigmoid())), path, sig)
    result = runner.invoke(app, ["model", "info", str(path), "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["format"] == "torchscript" and doc["signature"] == sig.to_dict()
    out = tmp_path / "mlp.onnx"
    result = runner.invoke(app, ["model", "export", str(path), "--onnx", str(out)])
    assert result.exit_code == 0, result.output
    assert out.is_file() and "max |onnx - torch|: y" in result.output
    import onnxruntime as ort

    x = np.ones((3, 4), dtype=np.float32)
    ref = torch.jit.load(str(path))(torch.from_numpy(x)).detach().numpy()
    got = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(got, ref, atol=1e-5)
