"""Bad inputs give an error naming the model input and its expected dtype and shape."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from neural import InputValidationError, ModelRegistry, Signature, TensorSpec

SIG = Signature(
    (TensorSpec("ids", "int64", (-1, -1)), TensorSpec("pixels", "float32", (-1, 3, 4))),
    (TensorSpec("score", "float32", (-1, 1)),),
)


class Tiny(torch.nn.Module):
    def forward(self, ids: torch.Tensor, pixels: torch.Tensor) -> torch.Tensor:
        return ids.float().mean(1, keepdim=True) + pixels.flatten(1).sum(1, keepdim=True)


@pytest.fixture(scope="module")
def entry():
    reg = ModelRegistry()
    yield reg.register_module(Tiny(), "tiny", signature=SIG)
    reg.close()


GOOD = {"ids": np.array([1, 2, 3], dtype=np.int64), "pixels": np.zeros((3, 4), dtype=np.float32)}


@pytest.mark.parametrize(
    ("request_", "pattern"),
    [
        ({"ids": GOOD["ids"]}, r"model 'tiny', input 'pixels': missing input; expected FP32 \(float32\) \[-1, 3, 4\]"),
        ({**GOOD, "extra": [1]}, r"input 'extra': unexpected input; the model takes \['ids', 'pixels'\]"),
        (
            {**GOOD, "pixels": np.zeros((4, 3), np.float32)},
            r"input 'pixels': axis 0 has size 4; expected shape \[3, 4\]",
        ),
        (
            {**GOOD, "pixels": np.zeros((3, 4, 1), np.float32)},
            r"input 'pixels': rank 3 \(shape \[3, 4, 1\]\); expected shape \[3, 4\]",
        ),
        ({**GOOD, "ids": np.array([1.5, 2.0])}, r"input 'ids': dtype FP64 \(float64\); expected INT64 \(int64\)"),
        ({**GOOD, "ids": np.array(["a", "b"])}, r"input 'ids': dtype BYTES \(<U1\); expected INT64 \(int64\)"),
        (
            {**GOOD, "pixels": np.ones((3, 4), np.int64)},
            r"input 'pixels': dtype INT64 \(int64\); expected FP32 \(float32\)",
        ),
        ({**GOOD, "ids": [1.5, 2.0]}, r"input 'ids': values are not whole numbers; expected INT64 \(int64\)"),
        ({**GOOD, "ids": [1.0, float("nan")]}, r"input 'ids': values are not whole numbers; expected INT64 \(int64\)"),
        (
            {**GOOD, "pixels": [["a", "b", "c", "d"]] * 3},
            r"input 'pixels': dtype BYTES \(<U1\); expected FP32 \(float32\)",
        ),
        ({**GOOD, "ids": [1.0, 1e30]}, r"input 'ids': values out of range for INT64 \(int64\)"),
    ],
)
def test_bad_request_names_input_and_expected_shape(entry, request_, pattern):
    with pytest.raises(InputValidationError, match=pattern):
        entry.submit(request_)
    assert entry.batcher.queue_size == 0


def test_lossless_casts_are_accepted(entry):
    out = entry.infer_sync(
        {"ids": np.array([1, 2, 3], dtype=np.int32), "pixels": np.ones((3, 4), dtype=np.float64)}, timeout_s=30
    )
    np.testing.assert_allclose(out["score"], [14.0])


def test_json_values_are_converted_to_the_model_dtype(entry):
    """Lists (as JSON gives them) carry no dtype: integers become float32, whole floats int64."""
    out = entry.infer_sync({"ids": [1.0, 2.0, 3.0], "pixels": [[1, 2, 3, 4]] * 3}, timeout_s=30)
    np.testing.assert_allclose(out["score"], [2.0 + 30.0])


def test_batched_predict_validates_the_batch_axis(entry):
    with pytest.raises(
        InputValidationError, match=r"input 'pixels': rank 2 \(shape \[3, 4\]\); expected shape \[-1, 3, 4\]"
    ):
        entry.predict({"ids": GOOD["ids"][None], "pixels": GOOD["pixels"]})
    out = entry.predict({"ids": GOOD["ids"][None], "pixels": GOOD["pixels"][None]})
    assert out["score"].shape == (1, 1)


def test_int_out_of_range_is_rejected():
    sig = Signature((TensorSpec("ids", "int32", (-1,)),), (TensorSpec("y", "float32", (-1,)),))
    with pytest.raises(InputValidationError, match=r"values out of range for INT32 \(int32\)"):
        sig.validate("m", {"ids": np.array([2**40])})


def test_invalid_requests_are_counted_in_metrics(entry):
    from neural import METRICS_REGISTRY

    before = (
        METRICS_REGISTRY.get_sample_value(
            "workbench_model_failures_total",
            {"model": "tiny", "version": entry.short_version, "reason": "invalid_input"},
        )
        or 0
    )
    with pytest.raises(InputValidationError):
        entry.submit({"ids": GOOD["ids"]})
    after = METRICS_REGISTRY.get_sample_value(
        "workbench_model_failures_total", {"model": "tiny", "version": entry.short_version, "reason": "invalid_input"}
    )
    assert after == before + 1


def test_float_values_beyond_the_input_dtype_are_refused_by_element_index():
    from neural.errors import InputValidationError
    from neural.signature import Signature, TensorSpec

    sig = Signature(inputs=(TensorSpec("x", "float32", (-1, 4)),), outputs=())
    with pytest.raises(InputValidationError) as err:
        sig.validate("m", {"x": [[0.0, 1.0, 2.0, 3.0], [0.0, 0.0, -1e300, 0.0]]})
    assert "input 'x'" in str(err.value) and "element [1, 2] = -1e+300 does not fit FP32 (float32)" in str(err.value)
    with pytest.raises(InputValidationError, match=r"element \[0, 3\]"):  # a float64 array too
        sig.validate("m", {"x": np.array([[0.0, 0.0, 0.0, 4e38]])})
    with pytest.raises(InputValidationError, match=r"element \[1\] = 70000 does not fit FP16 \(float16\)"):
        Signature(inputs=(TensorSpec("h", "float16", (-1,)),), outputs=()).validate("m", {"h": [1, 70000]})
    ok = sig.validate("m", {"x": [[3.0e38, -3.0e38, 0.0, float("nan")]]})["x"]  # in range (NaN is not an overflow)
    assert ok.dtype == np.float32 and ok[0, 0] == np.float32(3.0e38)
