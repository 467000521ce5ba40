"""Fixtures for pipeline tests: a tiny real torch classifier and a Workbench over copied fixtures."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch

FIXTURES = Path(__file__).parent / "fixtures"
# the complete example of docs/pipelines.md (digits_review.yaml and its knowledge bases) lives in the docs
EXAMPLE = Path(__file__).resolve().parents[3] / "docs" / "examples" / "digits_review"


def digit_pixels(digit: int, strength: float = 1.0) -> list[float]:
    """64 pixels whose ink is all in position `digit` (the test model predicts `digit` with high confidence)."""
    px = [0.0] * 64
    px[digit] = strength
    return px


def unsure_pixels() -> list[float]:
    """Ink spread evenly: the test model's scores are nearly uniform (low confidence)."""
    return [0.01] * 64


def make_digits_module() -> torch.nn.Module:
    """Linear 64 -> 10 whose logit k is 10 x pixel k: a real nn.Module with known predictions."""
    torch.manual_seed(0)
    lin = torch.nn.Linear(64, 10)
    with torch.no_grad():
        lin.weight.zero_()
        lin.bias.zero_()
        for k in range(10):
            lin.weight[k, k] = 10.0
    return lin


def digits_signature():
    from neural.signature import Signature, TensorSpec

    return Signature((TensorSpec("pixels", "float32", (-1, 64)),), (TensorSpec("logits", "float32", (-1, 10)),))


@pytest.fixture(autouse=True)
def _few_threads():
    torch.set_num_threads(1)


@pytest.fixture
def dirs(tmp_path):
    kb = tmp_path / "knowledge_bases"
    pipes = tmp_path / "pipelines"
    kb.mkdir()
    pipes.mkdir()
    for folder in (FIXTURES, EXAMPLE):
        for f in folder.glob("*.clp"):
            shutil.copy(f, kb / f.name)
        for f in folder.glob("*.yaml"):
            shutil.copy(f, pipes / f.name)
    return kb, pipes


def make_workbench(dirs, tmp_path, *, delay_ms: float = 20.0, max_batch: int = 32, queue: int = 1024):
    from neural.batching import BatcherConfig
    from workbench import Workbench

    kb, pipes = dirs
    wb = Workbench(knowledge_base_dir=kb, pipeline_dir=pipes, model_catalog=tmp_path / "no-catalog.yaml")
    wb.register_model(
        "digits-mlp",
        make_digits_module(),
        signature=digits_signature(),
        task="classification",
        batcher_config=BatcherConfig(
            max_batch_size=max_batch, max_queue_delay_ms=delay_ms, buckets=None, max_queue_size=queue
        ),
    )
    return wb


@pytest.fixture
def wb(dirs, tmp_path):
    w = make_workbench(dirs, tmp_path)
    yield w
    w.close()
