"""The committed digits model: safetensors weights, ONNX export and metrics agree with each other."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnxruntime as ort
import torch
from safetensors.torch import load_file
from sklearn.datasets import load_digits

from workbench.demo.digits_net import DigitsNet, DigitsNetConfig

ROOT = Path(__file__).resolve().parents[2]
MODEL = ROOT / "models" / "digits"


def _torch_net() -> DigitsNet:
    cfg = json.loads((MODEL / "config.json").read_text())
    net = DigitsNet(
        DigitsNetConfig(in_features=cfg["in_features"], hidden=cfg["hidden"], num_classes=cfg["num_classes"])
    )
    net.load_state_dict(load_file(str(MODEL / "model.safetensors")))
    return net.eval()


def test_onnx_export_matches_torch_weights_on_heldout_sequences():
    split = json.loads((MODEL / "split.json").read_text())
    x = load_digits().data[split["heldout"]].astype(np.float32)[:440].reshape(-1, 8, 64)  # [55, 8, 64]
    with torch.inference_mode():
        want = _torch_net()(torch.from_numpy(x)).numpy()
    sess = ort.InferenceSession(str(MODEL / "model.onnx"), providers=["CPUExecutionProvider"])
    got = sess.run(["logits"], {"pixels": x})[0]
    assert got.shape == (55, 8, 10)
    np.testing.assert_allclose(got, want, atol=1e-4, rtol=0)


def test_recorded_heldout_accuracy_is_what_the_weights_give():
    split = json.loads((MODEL / "split.json").read_text())
    metrics = json.loads((MODEL / "metrics.json").read_text())
    d = load_digits()
    held = np.asarray(split["heldout"])
    assert len(held) == metrics["heldout_size"] == 450
    assert not set(split["train"]) & set(split["heldout"])
    with torch.inference_mode():
        pred = _torch_net()(torch.tensor(d.data[held], dtype=torch.float32)).argmax(-1).numpy()
    assert abs(float((pred == d.target[held]).mean()) - metrics["heldout_accuracy"]) < 1e-6
