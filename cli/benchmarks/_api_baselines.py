"""The two reference servers of `workbench bench api`, each what a user would write instead of a
workbench pipeline (run as `python -m cli.benchmarks._api_baselines KIND PORT`):

- `hand_wired`: FastAPI + ONNX Runtime (the same `models/digits/model.onnx`) + clipspy running the
  same two knowledge bases (`demo_digits_gate.clp`, `demo_digits_checksum.clp`) per request, the
  facts written as CLIPS strings by hand, no recording and no explanation. FastAPI runs the `def`
  endpoint on its thread pool; each thread keeps its own two CLIPS environments (an environment is
  not thread-safe).
- `model_only`: FastAPI + the same ONNX model per request, no rules.

Both answer `POST /predict` with `{"input": {...}}` (the pipeline's input) and `GET /healthz`.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
MODEL = ROOT / "models" / "digits" / "model.onnx"
GATE = ROOT / "knowledge_bases" / "demo_digits_gate.clp"
CHECKSUM = ROOT / "knowledge_bases" / "demo_digits_checksum.clp"


def _session() -> Any:
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    return ort.InferenceSession(str(MODEL), opts, providers=["CPUExecutionProvider"])


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def model_only_app() -> Any:
    from fastapi import FastAPI

    app = FastAPI()
    sess = _session()
    name = sess.get_inputs()[0].name

    @app.get("/healthz")
    @app.get("/readyz")
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.post("/predict")
    def predict(body: dict[str, Any]) -> dict[str, Any]:
        images = np.asarray(body["input"]["images"], dtype=np.float32)[None]
        logits = sess.run(None, {name: images})[0][0]
        probs = _softmax(logits)
        return {"read": "".join(str(int(i)) for i in probs.argmax(-1)), "scores": probs.max(-1).round(4).tolist()}

    return app


def _sym_or_str(v: Any) -> str:
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return repr(v)


def hand_wired_app() -> Any:
    import clips
    from fastapi import FastAPI

    app = FastAPI()
    sess = _session()
    name = sess.get_inputs()[0].name
    local = threading.local()

    def envs() -> tuple[Any, Any]:
        if not hasattr(local, "gate"):
            local.gate, local.checksum = clips.Environment(), clips.Environment()
            local.gate.load(str(GATE))
            local.checksum.load(str(CHECKSUM))
        return local.gate, local.checksum

    def run(env: Any, facts: list[str]) -> list[Any]:
        env.reset()
        for f in facts:
            env.assert_string(f)
        env.run(100_000)
        return list(env.facts())

    @app.get("/healthz")
    @app.get("/readyz")
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.post("/predict")
    def predict(body: dict[str, Any]) -> dict[str, Any]:
        x = body["input"]
        images = x["images"]
        gate, checksum = envs()
        given = [f"(sequence (id {_sym_or_str(x.get('id', 'anonymous'))}) (length {len(images)}))"]
        given += [f"(image (pos {i}) (ink {float(sum(img))!r}))" for i, img in enumerate(images)]
        out = run(gate, given)
        route = next((f for f in out if f.template.name == "route"), None)
        branch = str(route["branch"]) if route is not None else "reject"
        if branch != "classify":
            return {"action": "rejected", "reason": str(route["reason"]) if route is not None else None}
        routed = given + [f"(route (branch classify) (reason {_sym_or_str(str(route['reason']))}))"]
        logits = sess.run(None, {name: np.asarray(images, dtype=np.float32)[None]})[0][0]
        probs = _softmax(logits)
        digits = []
        for i, p in enumerate(probs):
            values = " ".join(repr(float(v)) for v in p)
            digits.append(f"(digit (pos {i}) (label {int(p.argmax())}) (score {float(p.max())!r}) (probs {values}))")
        out = run(checksum, routed + digits)
        by = {f.template.name: f for f in out}
        decision, correction, check = by.get("decision"), by.get("correction"), by.get("checksum")
        return {
            "action": str(decision["action"]) if decision is not None else "rejected",
            "number": str(decision["number"]) if decision is not None else None,
            "read": str(decision["read"]) if decision is not None else None,
            "reason": str(decision["reason"]) if decision is not None else None,
            "corrected_position": int(correction["pos"]) if correction is not None else None,
            "checksum_valid": str(check["valid"]) if check is not None else None,
        }

    return app


def main(kind: str, port: int) -> None:
    import uvicorn

    app = {"hand_wired": hand_wired_app, "model_only": model_only_app}[kind]()
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
