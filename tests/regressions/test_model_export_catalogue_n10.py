"""Regression (n10, newcomer walk-through): `workbench model export NAME` knew only the built-in
models: `model export demo-digits --onnx x.onnx` said "no model named 'demo-digits' is registered;
known models: all-MiniLM-L6-v2, all-MiniLM-L6-v2-onnx" although `model list` lists demo-digits and
says any NAME it shows works with `model export`. Catalogue models now export by name (a torch
one is written, checked against torch), and the others get the real reason."""

from __future__ import annotations

from pathlib import Path

import torch
from typer.testing import CliRunner

from cli.app import app


class Scale(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.linear(x))


def test_catalogue_torch_model_exports_by_name(tmp_path, monkeypatch):
    from neural.loaders import save_torchscript
    from neural.signature import Signature, TensorSpec

    models = tmp_path / "models"
    models.mkdir()
    signature = Signature((TensorSpec("x", "float32", (-1, 4)),), (TensorSpec("y", "float32", (-1, 3)),))
    save_torchscript(torch.jit.script(Scale()), models / "scale.pt", signature)
    (models / "catalog.yaml").write_text(
        "models:\n  - {name: tiny-scale, format: torchscript, path: scale.pt, task: custom}\n"
    )
    monkeypatch.chdir(tmp_path)  # ./models/catalog.yaml is the catalogue, as in a project folder
    out = tmp_path / "tiny.onnx"
    r = CliRunner().invoke(app, ["model", "export", "tiny-scale", "--onnx", str(out)])
    assert r.exit_code == 0, r.output
    assert out.is_file() and "max |onnx - torch|" in r.stdout


def test_catalogue_onnx_model_gets_the_real_reason():
    repo = Path(__file__).resolve().parents[2]
    assert (repo / "models" / "catalog.yaml").is_file()
    r = CliRunner().invoke(app, ["model", "export", "demo-digits", "--onnx", "unused.onnx"])
    assert r.exit_code == 1
    assert "error: model 'demo-digits' runs on onnxruntime; only torch models can be exported" in r.output
    r = CliRunner().invoke(app, ["model", "export", "no-such-model", "--onnx", "unused.onnx"])
    assert r.exit_code == 1
    assert "known models:" in r.output and "demo-digits" in r.output and "demo-lm" in r.output
