"""Regression: `workbench model export NAME --onnx DIR` with DIR an existing directory said
"wrote DIR" but put the file inside it as DIR/DIR-name (after a full export); a path below a
regular file failed with a bare OSError. Now both are refused up front, nothing written."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from neural import ExportError, Signature, TensorSpec, export_onnx

SIG = Signature((TensorSpec("x", "float32", (-1, 4)),), (TensorSpec("y", "float32", (-1, 4)),))
EXAMPLES = [{"x": np.ones((2, 4), dtype=np.float32)}]


def test_output_path_that_is_a_directory(tmp_path) -> None:
    target = tmp_path / "out.onnx"
    target.mkdir()
    with pytest.raises(ExportError, match="is a directory; give the path of the ONNX file"):
        export_onnx(torch.nn.Linear(4, 4), SIG, EXAMPLES, target)
    assert list(target.iterdir()) == []


def test_output_path_below_a_file(tmp_path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(ExportError, match="is not a directory"):
        export_onnx(torch.nn.Linear(4, 4), SIG, EXAMPLES, blocker / "sub" / "m.onnx")
    assert blocker.read_text() == "x"
