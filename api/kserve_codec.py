"""Open Inference Protocol (KServe v2) tensors: JSON and the binary-data extension, both ways.

JSON tensors: `{"name", "shape", "datatype", "data"}` with `data` flat or nested in row-major
order. Binary-data extension (Triton's, which `tritonclient` uses by default): the request body
is the JSON inference header (`Inference-Header-Content-Length` bytes) followed by the raw
tensors of the inputs whose `parameters.binary_data_size` is set, in input order; fixed-size
types are little-endian row-major, BYTES elements are each a 4-byte little-endian length then
the bytes. An output is returned in binary when its request entry has `parameters.binary_data`
true, or when the request has `parameters.binary_data_output` true; the response then carries
the same header. Request bodies with `Content-Encoding: gzip|deflate` are decompressed.

References: KServe "Open Inference Protocol (V2)" REST spec; Triton "Binary Tensor Data
Extension" (docs/protocol/extension_binary_data.md).
"""

from __future__ import annotations

import gzip
import json
import struct
import zlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pydantic_core

from workbench.datatypes import V2_DATATYPES  # the one table of names (neural.signature), as api may import it
from workbench.pipeline.schema import json_quoted

# v2 datatype -> numpy dtype (BF16 is carried as float32; numpy has no bfloat16)
V2_DTYPES: dict[str, Any] = {
    "BOOL": np.bool_,
    "UINT8": np.uint8,
    "UINT16": np.uint16,
    "UINT32": np.uint32,
    "UINT64": np.uint64,
    "INT8": np.int8,
    "INT16": np.int16,
    "INT32": np.int32,
    "INT64": np.int64,
    "FP16": np.float16,
    "FP32": np.float32,
    "FP64": np.float64,
    "BF16": np.float32,
    "BYTES": np.object_,
}


class TensorCodecError(ValueError):
    """A request body or tensor is malformed; the message names the field (`inputs[1].shape`)."""


def v2_datatype(dtype_name: str) -> str:
    """Numpy/signature dtype name (`"float32"`, `"string"`) -> v2 datatype (`"FP32"`, `"BYTES"`)."""
    try:
        return V2_DATATYPES[dtype_name]
    except KeyError:
        raise TensorCodecError(f"dtype {dtype_name!r} has no Open Inference Protocol datatype") from None


@dataclass(slots=True)
class RequestedOutput:
    name: str
    binary: bool


@dataclass(slots=True)
class DecodedRequest:
    """An inference request: `inputs` maps names to arrays (batch axis first, as sent)."""

    id: str | None
    parameters: dict[str, Any]
    inputs: dict[str, np.ndarray]
    outputs: list[RequestedOutput] | None
    binary_output: bool
    input_datatypes: dict[str, str] = field(default_factory=dict)


def decode_request(body: bytes, header_length: str | None, content_encoding: str | None) -> DecodedRequest:
    """Parse an `/infer` body (JSON or binary-data extension).

    Raises:
        TensorCodecError: bad JSON, unknown datatype, shape/data mismatch, wrong binary sizes.
    """
    body = _decompress(body, content_encoding)
    if header_length is not None:
        try:
            n = int(header_length)
        except ValueError:
            raise TensorCodecError(
                f"Inference-Header-Content-Length must be an integer, got {header_length!r}"
            ) from None
        if not 0 < n <= len(body):
            raise TensorCodecError(f"Inference-Header-Content-Length {n} is outside the body's {len(body)} bytes")
        head, blob = body[:n], memoryview(body)[n:]
    else:
        head, blob = body, memoryview(b"")
    try:
        doc = json.loads(head)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise TensorCodecError(f"the inference request is not valid JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise TensorCodecError("the inference request must be a JSON object")
    raw_inputs = doc.get("inputs")
    if not isinstance(raw_inputs, list) or not raw_inputs:
        raise TensorCodecError("inputs: must be a non-empty list of tensors")
    params = doc.get("parameters") or {}
    if not isinstance(params, dict):
        raise TensorCodecError("parameters: must be an object")
    inputs: dict[str, np.ndarray] = {}
    datatypes: dict[str, str] = {}
    offset = 0
    for i, t in enumerate(raw_inputs):
        where = f"inputs[{i}]"
        arr, used = _decode_tensor(t, where, blob, offset)
        offset += used
        if t["name"] in inputs:
            raise TensorCodecError(f"{where}.name: input {t['name']!r} is given twice")
        inputs[t["name"]] = arr
        datatypes[t["name"]] = t["datatype"]
    if offset != len(blob):
        raise TensorCodecError(
            f"the body has {len(blob) - offset} bytes of binary data that no input's binary_data_size claims"
        )
    outputs = None
    if doc.get("outputs") is not None:
        if not isinstance(doc["outputs"], list):
            raise TensorCodecError("outputs: must be a list")
        outputs = []
        for i, o in enumerate(doc["outputs"]):
            if not isinstance(o, dict) or not isinstance(o.get("name"), str):
                raise TensorCodecError(f"outputs[{i}].name: required string")
            op = o.get("parameters") or {}
            outputs.append(RequestedOutput(o["name"], bool(op.get("binary_data", False))))
    rid = doc.get("id")
    return DecodedRequest(
        id=str(rid) if rid is not None else None,
        parameters=params,
        inputs=inputs,
        outputs=outputs,
        binary_output=bool(params.get("binary_data_output", False)),
        input_datatypes=datatypes,
    )


def _decompress(body: bytes, encoding: str | None) -> bytes:
    if not encoding or encoding == "identity":
        return body
    try:
        if encoding == "gzip":
            return gzip.decompress(body)
        if encoding == "deflate":
            return zlib.decompress(body)
    except (OSError, zlib.error, EOFError) as exc:
        raise TensorCodecError(f"Content-Encoding {encoding}: cannot decompress the body ({exc})") from None
    raise TensorCodecError(f"Content-Encoding {encoding!r} is not supported; use gzip, deflate or none")


def _decode_tensor(t: Any, where: str, blob: memoryview, offset: int) -> tuple[np.ndarray, int]:
    if not isinstance(t, dict):
        raise TensorCodecError(f"{where}: must be an object with name, shape, datatype and data")
    name, shape, dt = t.get("name"), t.get("shape"), t.get("datatype")
    if not isinstance(name, str) or not name:
        raise TensorCodecError(f"{where}.name: required non-empty string")
    where = f"{where} ({name!r})"
    if not isinstance(shape, list) or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
        raise TensorCodecError(f"{where}.shape: must be a list of non-negative integers, got {shape!r}")
    if dt not in V2_DTYPES:
        raise TensorCodecError(f"{where}.datatype: {dt!r} is not one of {', '.join(V2_DTYPES)}")
    count = int(np.prod(shape)) if shape else 1
    tp = t.get("parameters") or {}
    size = tp.get("binary_data_size") if isinstance(tp, dict) else None
    if size is not None:
        if "data" in t:
            raise TensorCodecError(f"{where}: has both data and parameters.binary_data_size")
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise TensorCodecError(
                f"{where}.parameters.binary_data_size: must be a non-negative integer (bytes), "
                f"got {json_quoted(size, 40)}"
            )
        if offset + size > len(blob):
            raise TensorCodecError(
                f"{where}.parameters.binary_data_size={size!r}: only {len(blob) - offset} bytes of binary data remain"
            )
        return _from_binary(bytes(blob[offset : offset + size]), dt, shape, count, where), size
    if "data" not in t:
        raise TensorCodecError(f"{where}.data: required (or parameters.binary_data_size for binary data)")
    return _from_json(t["data"], dt, shape, count, where), 0


def _flatten(data: Any) -> list[Any]:
    if not isinstance(data, list):
        return [data]
    out: list[Any] = []
    stack = [iter(data)]
    while stack:
        for x in stack[-1]:
            if isinstance(x, list):
                stack.append(iter(x))
                break
            out.append(x)
        else:
            stack.pop()
    return out


def _from_json(data: Any, dt: str, shape: list[int], count: int, where: str) -> np.ndarray:
    if not isinstance(data, list):
        raise TensorCodecError(
            f"{where}.data: must be a list (flat or nested) of {count} element{'s' * (count != 1)} for shape "
            f"{shape}, got {json_quoted(data, 40)}"
        )
    flat = _flatten(data)
    if len(flat) != count:
        raise TensorCodecError(
            f"{where}.data: {len(flat)} element{'s' * (len(flat) != 1)} for shape {shape} ({count} expected)"
        )
    if dt == "BYTES":
        arr = np.empty(count, dtype=object)
        for i, x in enumerate(flat):
            if not isinstance(x, str):
                raise TensorCodecError(
                    f"{where}.data[{i}]: BYTES elements in JSON must be strings, got {type(x).__name__}"
                )
            arr[i] = x.encode()
        return arr.reshape(shape)
    if dt == "BOOL":
        if not all(isinstance(x, bool) for x in flat):
            raise TensorCodecError(f"{where}.data: BOOL elements must be true or false")
    elif not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in flat):
        bad = next(i for i, x in enumerate(flat) if not isinstance(x, (int, float)) or isinstance(x, bool))
        raise TensorCodecError(f"{where}.data[{bad}]: {dt} elements must be numbers, got {flat[bad]!r}")
    np_dt = np.dtype(V2_DTYPES[dt])
    if np_dt.kind in "iu":
        if not all(isinstance(x, int) or float(x).is_integer() for x in flat):
            raise TensorCodecError(f"{where}.data: {dt} elements must be integers")
        info = np.iinfo(np_dt)
        if flat and (min(flat) < info.min or max(flat) > info.max):
            raise TensorCodecError(f"{where}.data: values out of range for {dt}")
    elif np_dt.kind == "f" and flat:
        # NaN/Infinity are not JSON (Python's parser accepts them) and 1e300 overflows FP32 to inf:
        # refuse both rather than feed the model an inf that comes back as NaN.
        wide = np.array(flat, dtype=np.float64)
        out_of_range = ~np.isfinite(wide) | (np.abs(wide) > float(np.finfo(np_dt).max))
        if out_of_range.any():
            bad = int(np.argmax(out_of_range))
            raise TensorCodecError(f"{where}.data[{bad}]: {flat[bad]!r} is not a finite number in the range of {dt}")
    return np.array(flat, dtype=np_dt).reshape(shape)


def _from_binary(raw: bytes, dt: str, shape: list[int], count: int, where: str) -> np.ndarray:
    if dt == "BYTES":
        items, pos = [], 0
        while pos < len(raw):
            if pos + 4 > len(raw):
                raise TensorCodecError(f"{where}: truncated BYTES element length at byte {pos}")
            (n,) = struct.unpack_from("<I", raw, pos)
            pos += 4
            if pos + n > len(raw):
                raise TensorCodecError(f"{where}: BYTES element of {n} bytes runs past the tensor's binary data")
            items.append(raw[pos : pos + n])
            pos += n
        if len(items) != count:
            raise TensorCodecError(f"{where}: {len(items)} BYTES elements for shape {shape} ({count} expected)")
        arr = np.empty(count, dtype=object)
        arr[:] = items
        return arr.reshape(shape)
    if dt == "BF16":
        if len(raw) != 2 * count:
            raise TensorCodecError(f"{where}: {len(raw)} bytes of BF16 data for shape {shape} ({2 * count} expected)")
        return (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32).reshape(shape)
    np_dt = np.dtype(V2_DTYPES[dt]).newbyteorder("<")
    if len(raw) != np_dt.itemsize * count:
        raise TensorCodecError(
            f"{where}: {len(raw)} bytes of {dt} data for shape {shape} ({np_dt.itemsize * count} expected)"
        )
    return np.frombuffer(raw, dtype=np_dt).astype(np_dt.newbyteorder("="), copy=True).reshape(shape)


def encode_response(
    model_name: str,
    model_version: str,
    request: DecodedRequest,
    outputs: dict[str, np.ndarray],
    datatypes: dict[str, str],
) -> tuple[bytes, dict[str, str]]:
    """Build the `/infer` response body and headers.

    `outputs` holds the tensors to return (already restricted to the requested ones), in order;
    `datatypes` maps each to its v2 datatype. Returns `(body, headers)`; headers carry
    `Inference-Header-Content-Length` when any output is binary.
    """
    binary_names = {o.name for o in request.outputs if o.binary} if request.outputs is not None else set()
    doc_outputs: list[dict[str, Any]] = []
    blobs: list[bytes] = []
    for name, arr in outputs.items():
        dt = datatypes[name]
        entry: dict[str, Any] = {"name": name, "shape": list(arr.shape), "datatype": dt}
        if request.binary_output or name in binary_names:
            raw = _to_binary(arr, dt)
            entry["parameters"] = {"binary_data_size": len(raw)}
            blobs.append(raw)
        else:
            entry["data"] = _to_json(arr, dt, name)
        doc_outputs.append(entry)
    doc: dict[str, Any] = {"model_name": model_name, "model_version": model_version, "outputs": doc_outputs}
    if request.id is not None:
        doc["id"] = request.id
    # a model's non-finite output (NaN, inf) is written as protobuf's JSON mapping of floats, the
    # strings "NaN", "Infinity", "-Infinity" (as run records are stored), never the NaN literal JSON lacks
    head = pydantic_core.to_json(doc, inf_nan_mode="strings")
    if not blobs:
        return head, {"Content-Type": "application/json"}
    return head + b"".join(blobs), {
        "Content-Type": "application/octet-stream",
        "Inference-Header-Content-Length": str(len(head)),
    }


def _to_json(arr: np.ndarray, dt: str, name: str) -> list[Any]:
    flat = arr.reshape(-1)
    if dt == "BYTES":
        out = []
        for x in flat:
            b = x if isinstance(x, bytes) else str(x).encode()
            try:
                out.append(b.decode())
            except UnicodeDecodeError:
                raise TensorCodecError(
                    f"output {name!r} holds bytes that are not UTF-8; request it with binary_data"
                ) from None
        return out
    if dt == "BF16":
        flat = flat.astype(np.float32)
    return flat.tolist()


def _to_binary(arr: np.ndarray, dt: str) -> bytes:
    if dt == "BYTES":
        parts = []
        for x in arr.reshape(-1):
            b = x if isinstance(x, bytes) else str(x).encode()
            parts.append(struct.pack("<I", len(b)) + b)
        return b"".join(parts)
    if dt == "BF16":
        u = np.ascontiguousarray(arr, dtype=np.float32).view(np.uint32).astype(np.uint64)
        return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype("<u2").tobytes()  # round to nearest even
    return np.ascontiguousarray(arr, dtype=np.dtype(V2_DTYPES[dt]).newbyteorder("<")).tobytes()
