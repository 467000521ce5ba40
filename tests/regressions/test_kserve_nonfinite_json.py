"""Regression: a KServe v2 JSON request with `Infinity`/`NaN` (not JSON, but Python's parser takes
them) or 1e300 in an FP32 tensor (overflows to inf) was run; the model answered NaN and the response
body carried bare `NaN` tokens that strict JSON clients cannot parse. Now a 400-class codec error
naming the element."""

from __future__ import annotations

import json

import numpy as np
import pytest

from api.kserve_codec import TensorCodecError, decode_request


def _body(data, dt="FP32"):
    tensor = f'{{"name":"x","shape":[1,{len(data)}],"datatype":"{dt}","data":[{",".join(data)}]}}'
    return ('{"inputs":[' + tensor + "]}").encode()


@pytest.mark.parametrize(
    "data,dt,bad",
    [
        (["1.0", "Infinity"], "FP32", 1),
        (["NaN", "0"], "FP64", 0),
        (["0", "-Infinity"], "FP16", 1),
        (["1e300", "0"], "FP32", 0),
        (["0", "70000"], "FP16", 1),
    ],
)
def test_non_finite_or_overflowing_float_is_refused(data, dt, bad):
    with pytest.raises(
        TensorCodecError, match=rf"inputs\[0\] \('x'\)\.data\[{bad}\]: .* is not a finite number in the range of {dt}"
    ):
        decode_request(_body(data, dt), None, None)


def test_finite_values_at_the_edge_still_decode():
    req = decode_request(_body(["3.0e38", "-1.5"], "FP32"), None, None)
    arr = req.inputs["x"]
    np.testing.assert_allclose(np.asarray(arr, dtype=np.float64), [[3.0e38, -1.5]], rtol=1e-6)
    json.dumps(np.asarray(arr).tolist(), allow_nan=False)
