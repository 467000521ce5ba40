"""Regression (n10 #16): `workbench model export prog.pt2 --onnx out.onnx` on a torch.export program,
which `model list` says works as NAME, crashed with `NotImplementedError: Calling eval() is not
supported yet.` (the export called `.eval()` on the program's unlifted module). The program now goes
to the torch.export-based ONNX exporter as it is; the written file must match the torch program's
numerics on batch sizes the export never saw (its batch dimension stays dynamic)."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import torch
from typer.testing import CliRunner

from cli.app import app


class Head(torch.nn.Module):
    """Linear -> GELU -> dropout (inert in eval mode) -> linear, softmax: a small classifier head."""

    def __init__(self) -> None:
        super().__init__()
        self.hidden = torch.nn.Linear(6, 8)
        self.drop = torch.nn.Dropout(0.3)
        self.out = torch.nn.Linear(8, 3)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return torch.softmax(self.out(self.drop(torch.nn.functional.gelu(self.hidden(features)))), dim=-1)


def test_torch_export_program_exports_and_matches_torch(tmp_path):
    torch.manual_seed(0)
    batch = torch.export.Dim("batch")
    program = torch.export.export(Head().eval(), (torch.zeros(2, 6),), dynamic_shapes=({0: batch},))
    pt2 = tmp_path / "head.pt2"
    torch.export.save(program, str(pt2))
    out = tmp_path / "head.onnx"

    r = CliRunner().invoke(app, ["model", "export", str(pt2), "--onnx", str(out)])
    assert r.exit_code == 0, r.output
    assert "NotImplementedError" not in r.output
    assert f"wrote {out}" in r.stdout and "max |onnx - torch|" in r.stdout

    session = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    assert [i.name for i in session.get_inputs()] == ["features"]
    reference = torch.export.load(str(pt2)).module()
    rng = np.random.default_rng(7)
    for rows in (1, 5, 17):
        x = rng.standard_normal((rows, 6)).astype(np.float32)
        (got,) = session.run(None, {"features": x})
        with torch.no_grad():
            want = reference(torch.from_numpy(x)).numpy()
        assert got.shape == (rows, 3)
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-5)
