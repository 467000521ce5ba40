"""Input/output signatures of models: tensor names, dtypes and shapes (-1 marks a dynamic axis).

Shapes include the batch axis first, as in ONNX and KServe v2 (`[-1, -1]` for `input_ids`).
`Signature.validate` checks a request before it reaches a model and raises `InputValidationError`
naming the input and the expected shape.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import InputValidationError

# Canonical dtype names (numpy spelling); KServe v2 names map onto them in the API room.
_DTYPES = {
    "bool",
    "int8",
    "uint8",
    "int16",
    "int32",
    "int64",
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "string",
}
# KServe v2 / Open Inference Protocol datatypes of the numpy names, the API's spelling: the one table
# (api.kserve_codec reaches it through workbench.datatypes, as front ends may not import neural).
# Messages name both, "FP32 (float32)": config files use the numpy names.
V2_DATATYPES = {
    "bool": "BOOL",
    "uint8": "UINT8",
    "uint16": "UINT16",
    "uint32": "UINT32",
    "uint64": "UINT64",
    "int8": "INT8",
    "int16": "INT16",
    "int32": "INT32",
    "int64": "INT64",
    "float16": "FP16",
    "float32": "FP32",
    "float64": "FP64",
    "bfloat16": "BF16",
    "string": "BYTES",
    "object": "BYTES",  # numpy's dtype of arrays of str/bytes, as the KServe codec decodes BYTES
}


def dtype_label(dtype: Any) -> str:
    """A dtype as messages name it: the KServe v2 datatype and the numpy name, `"FP32 (float32)"`;
    numpy's strings and objects (`<U1`, `object`) are `"BYTES (<U1)"`."""
    name = str(dtype)
    v2 = V2_DATATYPES.get(name)
    if v2 is None and getattr(dtype, "kind", None) in ("U", "S", "O"):
        v2 = "BYTES"
    return f"{v2} ({name})" if v2 is not None else name


_ONNX_TYPES = {
    "tensor(bool)": "bool",
    "tensor(int8)": "int8",
    "tensor(uint8)": "uint8",
    "tensor(int16)": "int16",
    "tensor(int32)": "int32",
    "tensor(int64)": "int64",
    "tensor(float16)": "float16",
    "tensor(bfloat16)": "bfloat16",
    "tensor(float)": "float32",
    "tensor(double)": "float64",
    "tensor(string)": "string",
}


@dataclass(slots=True, frozen=True)
class TensorSpec:
    """One named tensor: `dtype` in numpy spelling, `shape` with -1 for dynamic axes, optional axis names."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    dims: tuple[str | None, ...] | None = None

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("TensorSpec.name must be non-empty")
        if self.dtype not in _DTYPES:
            raise ValueError(f"TensorSpec {self.name!r}: unknown dtype {self.dtype!r}; accepted: {sorted(_DTYPES)}")
        object.__setattr__(self, "shape", tuple(int(d) for d in self.shape))
        if any(d < -1 for d in self.shape):
            raise ValueError(f"TensorSpec {self.name!r}: shape {list(self.shape)} has a dimension < -1")
        if self.dims is not None and len(self.dims) != len(self.shape):
            raise ValueError(f"TensorSpec {self.name!r}: {len(self.dims)} axis names for rank {len(self.shape)}")

    def describe(self) -> str:
        """`"INT64 (int64) [-1, -1]"`: the dtype (`dtype_label`) and shape as error messages print them."""
        return f"{dtype_label(self.dtype)} [{', '.join(str(d) for d in self.shape)}]"

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "datatype": self.dtype, "shape": list(self.shape)}


@dataclass(slots=True, frozen=True)
class Signature:
    """Ordered inputs and outputs of a model."""

    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "inputs", tuple(self.inputs))
        object.__setattr__(self, "outputs", tuple(self.outputs))
        for group, specs in (("input", self.inputs), ("output", self.outputs)):
            names = [s.name for s in specs]
            if len(set(names)) != len(names):
                raise ValueError(f"duplicate {group} names in signature: {names}")

    @property
    def input_names(self) -> list[str]:
        return [s.name for s in self.inputs]

    @property
    def output_names(self) -> list[str]:
        return [s.name for s in self.outputs]

    def input(self, name: str) -> TensorSpec:
        for spec in self.inputs:
            if spec.name == name:
                return spec
        raise KeyError(name)

    def to_dict(self) -> dict[str, Any]:
        return {"inputs": [s.to_dict() for s in self.inputs], "outputs": [s.to_dict() for s in self.outputs]}

    def validate(self, model: str, inputs: Mapping[str, Any], *, batched: bool = True) -> dict[str, np.ndarray]:
        """Check named inputs against the signature and return them as numpy arrays.

        `batched=True`: arrays carry the batch axis (shape as declared). `batched=False`: one
        request without the batch axis (the declared shape minus its first axis).
        numpy arrays of another integer width or float width are cast only when lossless in kind
        (int->int, float->float). Values that are not numpy arrays (lists and numbers, e.g. from
        JSON, which has one number type) are converted to the model's dtype: integers and booleans
        to a float dtype, and to an integer dtype when every value is a whole number (`3.0` -> 3).
        Raises `InputValidationError` naming the input, the expected dtype/shape and what came
        (e.g. `1.5` for an int64 input, strings for a numeric one, values out of the dtype's range).
        """
        missing = [s.name for s in self.inputs if s.name not in inputs]
        if missing:
            spec = self.input(missing[0])
            raise InputValidationError(
                model, missing[0], f"missing input; expected {spec.describe()}", spec.describe(), "nothing"
            )
        extra = [k for k in inputs if k not in self.input_names]
        if extra:
            raise InputValidationError(model, extra[0], f"unexpected input; the model takes {self.input_names}")
        out: dict[str, np.ndarray] = {}
        for spec in self.inputs:
            out[spec.name] = _check(model, spec, inputs[spec.name], batched)
        return out


def _check(model: str, spec: TensorSpec, value: Any, batched: bool) -> np.ndarray:
    expected_shape = spec.shape if batched else spec.shape[1:]
    expected = f"{dtype_label(spec.dtype)} [{', '.join(str(d) for d in expected_shape)}]"
    try:
        arr = np.asarray(value) if spec.dtype != "string" else np.asarray(value, dtype=object)
    except Exception as exc:
        raise InputValidationError(
            model, spec.name, f"cannot be read as an array ({exc}); expected {expected}", expected
        ) from exc
    got = f"{dtype_label(arr.dtype)} {list(arr.shape)}"
    if arr.ndim != len(expected_shape):
        raise InputValidationError(
            model,
            spec.name,
            f"rank {arr.ndim} (shape {list(arr.shape)}); expected shape {list(expected_shape)}",
            expected,
            got,
        )
    for axis, (want, have) in enumerate(zip(expected_shape, arr.shape)):
        if want != -1 and want != have:
            raise InputValidationError(
                model, spec.name, f"axis {axis} has size {have}; expected shape {list(expected_shape)}", expected, got
            )
    if spec.dtype == "string":
        return arr
    want = np.dtype("float32") if spec.dtype == "bfloat16" else np.dtype(spec.dtype)
    if arr.dtype != want:
        same_kind = (arr.dtype.kind in "iu" and want.kind in "iu") or (arr.dtype.kind == "f" and want.kind == "f")
        if arr.dtype.kind == "b" and want.kind == "b":
            same_kind = True
        if not isinstance(value, np.ndarray):  # JSON-like values carry no dtype: convert to the model's
            if want.kind == "f" and arr.dtype.kind in "iub":
                same_kind = True
            elif want.kind in "iu" and arr.dtype.kind == "f":
                if not (np.isfinite(arr).all() and (arr == np.trunc(arr)).all()):
                    raise InputValidationError(
                        model,
                        spec.name,
                        f"values are not whole numbers; expected {dtype_label(spec.dtype)}",
                        expected,
                        got,
                    )
                same_kind = True
        if not same_kind:
            raise InputValidationError(
                model, spec.name, f"dtype {dtype_label(arr.dtype)}; expected {dtype_label(spec.dtype)}", expected, got
            )
        if want.kind in "iu" and arr.size and (arr.min() < np.iinfo(want).min or arr.max() > np.iinfo(want).max):
            raise InputValidationError(
                model, spec.name, f"values out of range for {dtype_label(spec.dtype)}", expected, got
            )
        if want.kind == "f" and arr.dtype.kind in "fiu":
            _check_float_range(model, spec, arr, want, expected, got)
        arr = arr.astype(want)
    return arr


def _check_float_range(model: str, spec: TensorSpec, arr: np.ndarray, want: np.dtype, expected: str, got: str) -> None:
    """Refuse finite values whose magnitude is over `want`'s largest finite value (they would become
    inf, and inf - inf NaN, in the model): names the first such element by its index."""
    if arr.size == 0:
        return
    limit = float(np.finfo(want).max)
    if arr.dtype.kind == "f" and float(np.finfo(arr.dtype).max) <= limit:
        return
    if arr.dtype.kind in "iu" and int(np.iinfo(arr.dtype).max) <= limit:
        return
    with np.errstate(invalid="ignore", over="ignore"):
        mag = np.abs(arr.astype(np.float64) if arr.dtype.kind in "iu" else arr)
        over = np.isfinite(mag) & (mag > limit)
    if not over.any():
        return
    flat = int(np.argmax(over.ravel()))
    index = np.unravel_index(flat, arr.shape)
    value = arr.ravel()[flat].item()
    raise InputValidationError(
        model,
        spec.name,
        f"element [{', '.join(str(int(i)) for i in index)}] = {value!r} does not fit {dtype_label(spec.dtype)} "
        f"(largest {limit:.8g})",
        expected,
        got,
    )


def onnx_type_to_dtype(onnx_type: str) -> str:
    """`"tensor(float)"` -> `"float32"`; raises ValueError on an unsupported type."""
    try:
        return _ONNX_TYPES[onnx_type]
    except KeyError:
        raise ValueError(f"unsupported ONNX tensor type {onnx_type!r}") from None


def torch_dtype_name(dtype: Any) -> str:
    """`torch.float32` -> `"float32"`."""
    return str(dtype).removeprefix("torch.")
