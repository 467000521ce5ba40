"""The KServe v2 tensor codec against tritonclient's own encoder and decoder (no server needed)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import tritonclient.http as triton
from tritonclient.http._utils import _get_inference_request

from api.kserve_codec import TensorCodecError, decode_request, encode_response

TENSORS = {
    "FP16": np.array([[1.5, -2.25], [0.0, 65504.0]], dtype=np.float16),
    "INT8": np.array([[-128, 127, 0]], dtype=np.int8),
    "UINT64": np.array([2**63 + 5], dtype=np.uint64),
    "BOOL": np.array([True, False, True]),
    "BYTES": np.array([b"plain", "naïve café".encode(), b"\x00\xffraw"], dtype=object),
}


def _client_body(name: str, arr: np.ndarray, dt: str, binary: bool) -> tuple[bytes, int | None]:
    inp = triton.InferInput(name, list(arr.shape), dt)
    inp.set_data_from_numpy(arr, binary_data=binary)
    return _get_inference_request([inp], "", None, 0, False, False, 0, None, None)


@pytest.mark.parametrize("dt", list(TENSORS))
@pytest.mark.parametrize("binary", [True, False], ids=["binary", "json"])
def test_requests_encoded_by_tritonclient_decode_exactly(dt, binary):
    arr = TENSORS[dt]
    if dt == "BYTES" and not binary:
        arr = arr[:2]  # JSON carries BYTES as UTF-8 strings
    body, header_len = _client_body("t", arr, dt, binary)
    req = decode_request(
        body if isinstance(body, bytes) else body.encode(), None if header_len is None else str(header_len), None
    )
    got = req.inputs["t"]
    assert got.shape == arr.shape and req.input_datatypes["t"] == dt
    if dt == "BYTES":
        assert list(got.reshape(-1)) == list(arr.reshape(-1))
    else:
        assert got.dtype == arr.dtype and np.array_equal(got, arr)


@pytest.mark.parametrize("dt", list(TENSORS))
def test_binary_responses_decode_in_tritonclient(dt):
    arr = TENSORS[dt]
    body, header_len = _client_body("t", np.zeros((1,), np.float32), "FP32", False)
    req = decode_request(body if isinstance(body, bytes) else body.encode(), None, None)
    req.binary_output = True
    payload, headers = encode_response("m", "1", req, {"out": arr}, {"out": dt})
    res = triton.InferResult.from_response_body(payload, header_length=int(headers["Inference-Header-Content-Length"]))
    got = res.as_numpy("out")
    if dt == "BYTES":
        assert list(got.reshape(-1)) == list(arr.reshape(-1))
    else:
        assert np.array_equal(got, arr)


def test_bf16_round_trips_to_nearest_even():
    x = np.array([1.0, 3.140625, -0.0078125, 1.00390625 + 2**-9], dtype=np.float32)
    head = json.dumps(
        {"inputs": [{"name": "b", "shape": [4], "datatype": "BF16", "parameters": {"binary_data_size": 8}}]}
    ).encode()
    bf16 = (x.view(np.uint32) >> 16).astype("<u2").tobytes()  # exactly representable except the last
    req = decode_request(head + bf16, str(len(head)), None)
    assert np.array_equal(req.inputs["b"][:3], x[:3])
    req.binary_output = True
    payload, headers = encode_response("m", "1", req, {"o": x}, {"o": "BF16"})
    raw = payload[int(headers["Inference-Header-Content-Length"]) :]
    back = (np.frombuffer(raw, "<u2").astype(np.uint32) << 16).view(np.float32)
    assert np.array_equal(back[:3], x[:3]) and back[3] == np.float32(1.0078125)  # rounded up, not truncated


@pytest.mark.parametrize(
    "doc, fragment",
    [
        ({"inputs": [{"name": "a", "shape": [2], "datatype": "INT8", "data": [1, 300]}]}, "out of range for INT8"),
        ({"inputs": [{"name": "a", "shape": [2], "datatype": "INT32", "data": [1, 2.5]}]}, "must be integers"),
        ({"inputs": [{"name": "a", "shape": [2], "datatype": "BOOL", "data": [1, 0]}]}, "true or false"),
        ({"inputs": [{"name": "a", "shape": [-1], "datatype": "FP32", "data": []}]}, "non-negative integers"),
        (
            {
                "inputs": [
                    {"name": "a", "shape": [1], "datatype": "FP32", "data": [1]},
                    {"name": "a", "shape": [1], "datatype": "FP32", "data": [1]},
                ]
            },
            "given twice",
        ),
        # n16: a string, null or object was counted as "1 elements"
        (
            {"inputs": [{"name": "a", "shape": [1, 2], "datatype": "FP32", "data": "abc"}]},
            'of 2 elements for shape [1, 2], got "abc"',
        ),
        (
            {"inputs": [{"name": "a", "shape": [1], "datatype": "FP32", "data": None}]},
            "of 1 element for shape [1], got null",
        ),
        ({"inputs": [{"name": "a", "shape": [1], "datatype": "FP32", "data": [[]]}]}, "data: 0 elements for shape [1]"),
    ],
)
def test_bad_tensors_name_the_field(doc, fragment):
    with pytest.raises(TensorCodecError, match=fragment.replace("[", r"\[")):
        decode_request(json.dumps(doc).encode(), None, None)


@pytest.mark.parametrize("size", [-256, "256", True, 2.5])
def test_a_binary_data_size_that_is_no_byte_count_is_named(size):
    """n16: `-256`, `"256"` were answered "only 256 bytes of binary data remain"."""
    head = json.dumps(
        {"inputs": [{"name": "a", "shape": [1], "datatype": "FP32", "parameters": {"binary_data_size": size}}]}
    ).encode()
    with pytest.raises(TensorCodecError) as e:
        decode_request(head + b"\0" * 256, str(len(head)), None)
    assert str(e.value) == (
        f"inputs[0] ('a').parameters.binary_data_size: must be a non-negative integer (bytes), got {json.dumps(size)}"
    )
