"""Bugs fixed in the neural runtime, each with its smallest input (kept here: tests/neural is this room's folder)."""

from __future__ import annotations

import numpy as np
import torch

from neural import BatcherConfig, DynamicBatcher, Signature, TensorRunner, TensorSpec, TorchBackend


class _Shapes:
    kind, device, dtype = "fake", "cpu", "float32"

    def __init__(self) -> None:
        self.seen: list[dict[str, tuple[int, ...]]] = []

    def run(self, inputs):
        self.seen.append({k: v.shape for k, v in inputs.items()})
        return {"y": np.zeros((len(inputs["tokens"]), 1), np.float32)}


def test_every_sequence_input_is_padded_to_the_bucket():
    # was: only the first input (tokens) was padded to the bucket, the mask only to the longest request
    sig = Signature(
        (TensorSpec("tokens", "int64", (-1, -1)), TensorSpec("mask", "float32", (-1, -1))),
        (TensorSpec("y", "float32", (-1, 1)),),
    )
    backend = _Shapes()
    runner = TensorRunner("m", backend, sig, padding_safe=True)
    items = [runner.prepare({"tokens": np.ones(3, np.int64), "mask": np.ones(3, np.float32)})]
    runner.run_batch(items, pad_to=8)
    assert backend.seen == [{"tokens": (1, 8), "mask": (1, 8)}]


async def test_stats_include_the_batch_before_its_results_arrive():
    # was: stats were updated after the futures were resolved, so a caller could see its result but not its batch
    b = DynamicBatcher("stats-race", lambda items, pad: items, BatcherConfig(max_queue_delay_ms=0))
    for i in range(30):
        await b.infer(i)
        assert b.stats.batches == i + 1
    b.close()


def test_torchscript_linear_runs_in_the_backend():
    # was: TorchScript modules under torch.inference_mode() failed ("Inference tensors cannot be saved for backward")
    sig = Signature((TensorSpec("x", "float32", (-1, 4)),), (TensorSpec("y", "float32", (-1, 2)),))
    module = torch.jit.script(torch.nn.Sequential(torch.nn.Linear(4, 2), torch.nn.Sigmoid()))
    out = TorchBackend(module, sig, device="cpu").run({"x": np.ones((3, 4), np.float32)})
    assert out["y"].shape == (3, 2)
