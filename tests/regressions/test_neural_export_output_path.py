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


def test_missing_folder_is_refused_not_created(tmp_path) -> None:
    """r12: the library made the missing folders (and wrote the file) while `workbench model export
    --onnx` refuses them (cli/outputs.py); now both follow the CLI's rule, before any export."""
    target = tmp_path / "missing" / "deeper" / "m.onnx"
    with pytest.raises(ExportError, match=r"the folder .*missing[/\\]deeper does not exist \(missing folders are not"):
        export_onnx(torch.nn.Linear(4, 4), SIG, EXAMPLES, target)
    assert list(tmp_path.iterdir()) == []
