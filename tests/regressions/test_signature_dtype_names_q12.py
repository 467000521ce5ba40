"""Signature errors name a dtype as the API speaks it and as config files write it (q12): KServe v2's
datatype and numpy's name, "FP32 (float32)". They named numpy's alone (float32), while a KServe client
sends and reads "FP32"."""

from __future__ import annotations

import numpy as np
import pytest

from neural.errors import InputValidationError
from neural.signature import Signature, TensorSpec, dtype_label

SIG = Signature(
    (TensorSpec("x", "float32", (-1, 2)), TensorSpec("ids", "int64", (-1,)), TensorSpec("t", "string", (-1,))),
    (TensorSpec("y", "float16", (-1,)),),
)


@pytest.mark.parametrize(
    "inputs,message",
    [
        ({"ids": [1], "t": ["a"]}, "input 'x': missing input; expected FP32 (float32) [-1, 2]"),
        ({"x": [[1e39, 0.0]], "ids": [1], "t": ["a"]}, "does not fit FP32 (float32) (largest 3.4028235e+38)"),
        (
            {"x": [[1.0, 0.0]], "ids": [1.5], "t": ["a"]},
            "input 'ids': values are not whole numbers; expected INT64 (int64)",
        ),
        ({"x": np.ones((1, 2), np.int64), "ids": [1], "t": ["a"]}, "dtype INT64 (int64); expected FP32 (float32)"),
        ({"x": [["a", "b"]], "ids": [1], "t": ["a"]}, "input 'x': dtype BYTES (<U1); expected FP32 (float32)"),
    ],
)
def test_messages_name_the_kserve_datatype_and_the_numpy_dtype(inputs, message) -> None:
    with pytest.raises(InputValidationError) as err:
        SIG.validate("m", inputs)
    assert message in str(err.value)


def test_every_signature_dtype_has_both_names() -> None:
    assert dtype_label("float32") == "FP32 (float32)" and dtype_label(np.dtype("float64")) == "FP64 (float64)"
    assert dtype_label("bfloat16") == "BF16 (bfloat16)" and dtype_label("string") == "BYTES (string)"
    assert dtype_label("bool") == "BOOL (bool)" and dtype_label("uint8") == "UINT8 (uint8)"
    assert SIG.input("x").describe() == "FP32 (float32) [-1, 2]"
