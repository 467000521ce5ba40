"""ONNX export writes nothing unless ONNX Runtime reproduces torch within tolerance."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from neural import ExportError, Signature, TensorSpec, export_onnx

SIG = Signature((TensorSpec("x", "float32", (-1, 4)),), (TensorSpec("y", "float32", (-1, 4)),))


class DriftsAfterTracing(torch.nn.Module):
    """Its Python-side counter is frozen into the traced graph, so ONNX and torch disagree afterwards."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        return x * float(self.calls)


def test_numerics_mismatch_writes_nothing(tmp_path):
    out = tmp_path / "drift.onnx"
    examples = [{"x": np.ones((2, 4), dtype=np.float32)}, {"x": np.ones((3, 4), dtype=np.float32)}]
    with pytest.raises(
        ExportError, match=r"output 'y' on example 0: max \|onnx - torch\| = .* > atol 0.0001; nothing written"
    ):
        export_onnx(DriftsAfterTracing(), SIG, examples, out)
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_dynamic_batch_axis_is_checked_on_every_example(tmp_path):
    torch.manual_seed(0)
    module = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Tanh())
    examples = [
        {"x": np.random.default_rng(i).standard_normal((b, 4)).astype(np.float32)} for i, b in enumerate((1, 5))
    ]
    report = export_onnx(module, SIG, examples, tmp_path / "mlp.onnx")
    assert report.exporter in ("torchscript", "dynamo") and report.max_abs_diff["y"] < 1e-5
    import onnxruntime as ort

    sess = ort.InferenceSession(str(report.path), providers=["CPUExecutionProvider"])
    assert sess.get_inputs()[0].shape[0] == "batch"
