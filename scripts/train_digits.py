"""Train the digits demo network on scikit-learn's bundled handwritten digits (nothing downloaded).

Writes into `models/digits/` (or --out):
  model.safetensors   the trained weights (float32)
  config.json         architecture, input/output signature, labels, training settings
  model.onnx          the ONNX export, checked against torch before it is written
  split.json          the fixed train / held-out split (indices into `load_digits()`)
  metrics.json        training and held-out accuracy, ONNX-vs-torch max abs difference

Usage: uv run python scripts/train_digits.py [--out models/digits] [--epochs 60] [--seed 0]
Takes a few seconds on one CPU core.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import save_file
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from torch import nn

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from workbench.demo.digits_net import DigitsNet, DigitsNetConfig  # noqa: E402

HELDOUT_FRACTION = 0.25
SPLIT_SEED = 0  # fixed: the held-out split is part of the demo's definition, not a training knob
ONNX_ATOL = 1e-4


def fixed_split() -> tuple[np.ndarray, np.ndarray]:
    """Stratified 75/25 split of the 1,797 images; returns (train_idx, heldout_idx), int64, sorted."""
    y = load_digits().target
    idx = np.arange(len(y))
    train_idx, held_idx = train_test_split(idx, test_size=HELDOUT_FRACTION, random_state=SPLIT_SEED, stratify=y)
    return np.sort(train_idx), np.sort(held_idx)


def train(
    x: torch.Tensor, y: torch.Tensor, cfg: DigitsNetConfig, epochs: int, seed: int, lr: float, batch: int
) -> DigitsNet:
    """Adam + cross-entropy, shuffled mini-batches from a seeded generator. x float32 [N,64], y int64 [N]."""
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    net = DigitsNet(cfg)
    opt = torch.optim.Adam(net.parameters(), lr=lr, weight_decay=1e-4)
    loss_fn = nn.CrossEntropyLoss()
    for _ in range(epochs):
        net.train()
        perm = torch.randperm(len(x), generator=gen)
        for start in range(0, len(x), batch):
            sel = perm[start : start + batch]
            opt.zero_grad()
            loss_fn(net(x[sel]), y[sel]).backward()
            opt.step()
    return net.eval()


def export_onnx(net: DigitsNet, path: Path, probe: torch.Tensor) -> float:
    """Export to ONNX with input `pixels` float32 [batch, digits, 64] -> `logits` float32
    [batch, digits, 10] (both axes dynamic: one request is a sequence of digit images, e.g. an
    account number; the network classifies each image independently). Runs the file on ONNX
    Runtime's CPU provider and compares with torch on `probe` (float32 [B, L, 64]); writes the
    file only when max |diff| <= ONNX_ATOL.

    Returns: the max absolute difference of the logits.
    Raises: RuntimeError when the numerics differ more than ONNX_ATOL.
    """
    import onnxruntime as ort

    tmp = path.with_suffix(".onnx.tmp")
    batch = torch.export.Dim("batch", min=1, max=4096)
    digits = torch.export.Dim("digits", min=1, max=256)
    torch.onnx.export(
        net,
        (probe[:2, :3],),
        str(tmp),
        input_names=["pixels"],
        output_names=["logits"],
        dynamic_shapes={"pixels": {0: batch, 1: digits}},
        dynamo=True,
        external_data=False,
    )
    sess = ort.InferenceSession(str(tmp), providers=["CPUExecutionProvider"])
    got = sess.run(["logits"], {"pixels": probe.numpy()})[0]
    with torch.inference_mode():
        want = net(probe).numpy()
    diff = float(np.max(np.abs(got - want)))
    if diff > ONNX_ATOL:
        tmp.unlink(missing_ok=True)
        raise RuntimeError(
            f"ONNX export differs from torch by {diff:.3g} > {ONNX_ATOL} on {len(probe)} images; not written"
        )
    tmp.replace(path)
    return diff


def check_onnx(path: Path, net: DigitsNet, probe: torch.Tensor) -> float:
    """Max |ONNX Runtime - torch| of the logits on `probe` float32 [B, L, 64]."""
    import onnxruntime as ort

    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    with torch.inference_mode():
        want = net(probe).numpy()
    return float(np.max(np.abs(sess.run(["logits"], {"pixels": probe.numpy()})[0] - want)))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "models" / "digits")
    ap.add_argument("--epochs", type=int, default=60)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--batch", type=int, default=64)
    args = ap.parse_args(argv)

    torch.set_num_threads(1)
    t0 = time.perf_counter()
    data = load_digits()
    train_idx, held_idx = fixed_split()
    x = torch.tensor(data.data, dtype=torch.float32)
    y = torch.tensor(data.target, dtype=torch.int64)
    cfg = DigitsNetConfig()
    net = train(x[train_idx], y[train_idx], cfg, args.epochs, args.seed, args.lr, args.batch)
    train_seconds = time.perf_counter() - t0

    with torch.inference_mode():
        acc = {
            name: float((net(x[i]).argmax(1) == y[i]).float().mean())
            for name, i in (("train", train_idx), ("heldout", held_idx))
        }

    args.out.mkdir(parents=True, exist_ok=True)
    weights = args.out / "model.safetensors"
    save_file({k: v.contiguous() for k, v in net.state_dict().items()}, str(weights))
    held = x[held_idx]
    usable = len(held) // 10 * 10
    onnx_diff = max(
        export_onnx(net, args.out / "model.onnx", held[:usable].reshape(-1, 10, 64)),
        check_onnx(args.out / "model.onnx", net, held.reshape(-1, 1, 64)),
    )

    config = {
        "architecture": "DigitsNet",
        "module": "workbench.demo.digits_net",
        "hidden": cfg.hidden,
        "in_features": cfg.in_features,
        "num_classes": cfg.num_classes,
        "dropout": cfg.dropout,
        "labels": [str(d) for d in range(10)],
        "task": "classification",
        "inputs": [
            {
                "name": "pixels",
                "datatype": "float32",
                "shape": [-1, -1, 64],
                "description": "[batch, digits, 64]: a sequence of 8x8 images, row-major, values 0..16",
            }
        ],
        "outputs": [{"name": "logits", "datatype": "float32", "shape": [-1, -1, 10]}],
        "dataset": "sklearn.datasets.load_digits",
        "training": {
            "epochs": args.epochs,
            "seed": args.seed,
            "lr": args.lr,
            "batch": args.batch,
            "optimizer": "adam",
            "weight_decay": 1e-4,
        },
    }
    (args.out / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    split = {
        "dataset": "sklearn.datasets.load_digits",
        "seed": SPLIT_SEED,
        "heldout_fraction": HELDOUT_FRACTION,
        "train": train_idx.tolist(),
        "heldout": held_idx.tolist(),
    }
    (args.out / "split.json").write_text(json.dumps(split) + "\n")
    metrics = {
        "train_accuracy": acc["train"],
        "heldout_accuracy": acc["heldout"],
        "train_size": len(train_idx),
        "heldout_size": len(held_idx),
        "onnx_max_abs_diff": onnx_diff,
        "train_seconds": round(train_seconds, 3),
        "weights_sha256": hashlib.sha256(weights.read_bytes()).hexdigest(),
        "torch": torch.__version__,
    }
    (args.out / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
    print(json.dumps(metrics, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
