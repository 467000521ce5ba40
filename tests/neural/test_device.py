"""Device and precision choices, ONNX Runtime provider probing, int8 on CPU."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from neural import (
    ModelRegistry,
    Signature,
    TensorSpec,
    cuda_usable,
    default_device,
    resolve_device,
    resolve_precision,
    usable_providers,
)


def test_auto_device_follows_what_works():
    assert resolve_device("auto") == resolve_device(None) == default_device()
    assert default_device() in ("cuda", "cpu") and (default_device() == "cuda") <= cuda_usable()
    assert resolve_device("cpu") == "cpu"
    with pytest.raises(ValueError, match="unknown device 'tpu'; accepted: auto, cpu, cuda, cuda:N"):
        resolve_device("tpu")


@pytest.mark.skipif(cuda_usable(), reason="checks the CPU-only refusal")
def test_cuda_and_half_precision_refused_without_a_gpu():
    with pytest.raises(ValueError, match="CUDA is not usable"):
        resolve_device("cuda")
    with pytest.raises(ValueError, match="float16 needs a CUDA device"):
        resolve_precision("fp16", "cpu")
    with pytest.raises(ValueError, match="bfloat16 needs a CUDA device"):
        resolve_precision("bf16", "cpu")


def test_precision_names():
    assert resolve_precision(None, "cpu").name == "float32"
    assert resolve_precision("int8", "cpu").dynamic_int8
    with pytest.raises(ValueError, match="int8 .* is CPU-only"):
        resolve_precision("int8", "cuda")
    with pytest.raises(ValueError, match="unknown dtype 'fp8'"):
        resolve_precision("fp8", "cpu")


def test_onnxruntime_providers_are_probed_not_listed():
    import onnxruntime as ort

    usable = usable_providers()
    assert usable[-1] == "CPUExecutionProvider"
    if not cuda_usable():  # onnxruntime-gpu lists CUDA here, but no session can run on it
        assert "CUDAExecutionProvider" in ort.get_available_providers() or True
        assert "CUDAExecutionProvider" not in usable and "TensorrtExecutionProvider" not in usable


def test_dynamic_int8_on_cpu_stays_close_to_fp32():
    torch.manual_seed(0)
    module = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 8))
    sig = Signature((TensorSpec("x", "float32", (-1, 64)),), (TensorSpec("y", "float32", (-1, 8)),))
    reg = ModelRegistry()
    x = np.random.default_rng(0).standard_normal((4, 64)).astype(np.float32)
    with torch.inference_mode():
        ref = module(torch.from_numpy(x)).numpy()
    entry = reg.register_module(module, "mlp-int8", signature=sig, dtype="int8", device="cpu")
    got = entry.predict({"x": x})["y"]
    assert entry.dtype == "int8"
    assert np.abs(got - ref).max() < 0.05 * np.abs(ref).max()
    assert not np.array_equal(got, ref)  # really quantised
    reg.close()
