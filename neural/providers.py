"""ONNX Runtime execution providers chosen by what actually creates a session.

`onnxruntime-gpu` lists CUDA and TensorRT in `get_available_providers()` even on a machine with no
GPU, so the list cannot be trusted: each provider is tried on a one-node model and kept only if a
session really runs with it. The result is computed once per process and logged once.
"""

from __future__ import annotations

import functools
import logging
import warnings

import numpy as np

log = logging.getLogger("neural.providers")

_PREFERENCE = ("TensorrtExecutionProvider", "CUDAExecutionProvider", "CPUExecutionProvider")


def _probe_model() -> bytes:
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "probe", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model.SerializeToString()


def _works(provider: str, model: bytes) -> tuple[bool, str]:
    import contextlib
    import io

    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.log_severity_level = 4  # the failed CUDA/TensorRT probes log errors we report ourselves
    try:
        # onnxruntime prints its fallback notice on stdout and logs load errors natively: keep both quiet
        ort.set_default_logger_severity(4)
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            sess = ort.InferenceSession(model, sess_options=opts, providers=[provider])
        if provider not in sess.get_providers():
            return False, "session fell back to another provider"
        out = sess.run(None, {"x": np.array([[-1.0, 0.0, 1.0, 2.0]], dtype=np.float32)})[0]
        return bool(np.array_equal(out, [[0.0, 0.0, 1.0, 2.0]])), "ok"
    except Exception as exc:
        return False, str(exc).splitlines()[0][:200]
    finally:
        ort.set_default_logger_severity(2)


@functools.cache
def usable_providers() -> tuple[str, ...]:
    """Providers that create and run a session here, best first (TensorRT, CUDA, then CPU)."""
    import onnxruntime as ort

    listed = ort.get_available_providers()
    model = _probe_model()
    usable: list[str] = []
    notes: list[str] = []
    for provider in _PREFERENCE:
        if provider not in listed:
            continue
        ok, why = _works(provider, model)
        (usable.append(provider) if ok else notes.append(f"{provider}: {why}"))
    if "CPUExecutionProvider" not in usable:
        usable.append("CPUExecutionProvider")
    log.info(
        "onnxruntime %s providers usable: %s%s",
        ort.__version__,
        usable,
        f" (not usable: {'; '.join(notes)})" if notes else "",
    )
    return tuple(usable)


def providers_for(device: str) -> list[str]:
    """Providers to use for a model on `device`: the usable GPU ones for CUDA, then CPU as fallback."""
    usable = usable_providers()
    if device.startswith("cuda"):
        return [p for p in usable if p != "CPUExecutionProvider"] + ["CPUExecutionProvider"]
    return ["CPUExecutionProvider"]
