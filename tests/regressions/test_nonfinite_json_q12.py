"""A float that is not finite has one JSON spelling on every surface (q12): protobuf's JSON mapping,
the strings "NaN", "Infinity" and "-Infinity", as stored runs and KServe answers already wrote it.
Pipeline predict answers wrote null (single and batch) or bare NaN tokens (the event stream), backward
chaining's JSON "nan"/"inf", `kb run --json` bare Infinity/NaN (not JSON). Oracle for the values:
real CLIPS through clipspy computes inf, -inf and nan for the knowledge base's expressions."""

from __future__ import annotations

import math
import shutil
import subprocess
import sys
from pathlib import Path

import clips
import httpx
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "api"))
from api_live import make_settings, served_workbench  # noqa: E402
from nonfinite_cases import CASES, WANT, strict_json  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def test_clips_computes_inf_minus_inf_and_nan() -> None:
    env = clips.Environment()
    env.load(str(CASES / "nonfinite.clp"))
    env.reset()
    env.assert_string("(in (x 2))")
    env.run()
    (r,) = [f for f in env.facts() if f.template.name == "r"]
    assert r["pos"] == math.inf and r["neg"] == -math.inf and math.isnan(r["nan"]) and r["ok"] == 3.0


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("nonfinite")
    (tmp / "kb").mkdir()
    (tmp / "pipes").mkdir()
    shutil.copy(CASES / "nonfinite.clp", tmp / "kb")
    shutil.copy(CASES / "nonfinite.yaml", tmp / "pipes")
    settings = make_settings(tmp, knowledge_base_dir=str(tmp / "kb"), pipeline_dir=str(tmp / "pipes"))
    with served_workbench(settings) as live:
        yield live


def test_predict_answer_writes_the_strings(server) -> None:
    r = httpx.post(server.url + "/v1/pipelines/nonfinite/predict", json={"input": {"x": 2}}, timeout=60)
    assert r.status_code == 200, r.text
    doc = strict_json(r.text)
    assert doc["outputs"] == WANT
    stored = strict_json(httpx.get(f"{server.url}/v1/runs/{doc['run_id']}", timeout=60).text)
    assert stored["outputs"] == WANT  # as the store wrote it


def test_batch_answer_writes_the_strings(server) -> None:
    r = httpx.post(server.url + "/v1/pipelines/nonfinite/predict", json={"inputs": [{"x": 2}, {"x": 2}]}, timeout=60)
    assert r.status_code == 200, r.text
    assert [x["outputs"] for x in strict_json(r.text)["results"]] == [WANT, WANT]


def test_stream_events_write_the_strings(server) -> None:
    r = httpx.post(server.url + "/v1/pipelines/nonfinite/predict", json={"input": {"x": 2}, "stream": True}, timeout=60)
    assert r.status_code == 200, r.text
    docs = [strict_json(line[len("data: ") :]) for line in r.text.splitlines() if line.startswith("data: ")]
    (result,) = [d for d in docs if d.get("event") == "result"]  # every event parsed as standard JSON
    assert result["run"]["outputs"] == WANT


def _workbench(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "cli", *args], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )


GOAL = "(r (pos ?p) (neg ?n) (nan ?q) (ok ?o))"
BINDINGS = {"p": "Infinity", "n": "-Infinity", "q": "NaN", "o": 3.0}


def test_backward_json_writes_the_strings(tmp_path) -> None:
    facts = tmp_path / "facts.json"
    facts.write_text('[{"template": "in", "slots": {"x": 2}}]')
    r = _workbench("kb", "ask", str(CASES / "nonfinite.clp"), GOAL, "--json", "--facts", str(facts))
    assert r.returncode == 0, r.stderr
    assert [a["bindings"] for a in strict_json(r.stdout)["answers"]] == [BINDINGS]


def test_backward_json_over_http_writes_the_strings(server) -> None:
    body = {"goal": GOAL, "facts": [{"template": "in", "slots": {"x": 2}}]}
    r = httpx.post(server.url + "/v1/kb/nonfinite/ask", json=body, timeout=60)
    assert r.status_code == 200, r.text
    assert [a["bindings"] for a in strict_json(r.text)["answers"]] == [BINDINGS]


def test_forward_json_writes_the_strings(tmp_path) -> None:
    facts = tmp_path / "facts.json"
    facts.write_text('[{"template": "in", "slots": {"x": 2}}]')
    r = _workbench("kb", "run", str(CASES / "nonfinite.clp"), "--facts", str(facts), "--json")
    assert r.returncode == 0, r.stderr
    slots = {f["template"]: f["slots"] for f in strict_json(r.stdout)["facts"]}
    assert slots["r"] == {"pos": "Infinity", "neg": "-Infinity", "nan": "NaN", "ok": 3.0}
    assert slots["limit"] == {"implied": ["Infinity", "-Infinity"]}


def test_forward_json_over_http_writes_the_strings(server) -> None:
    r = httpx.post(server.url + "/v1/kb/nonfinite/run", json={"facts": [{"template": "in", "slots": {"x": 2}}]})
    assert r.status_code == 200, r.text
    slots = {f["template"]: f["slots"] for f in strict_json(r.text)["facts"]}
    assert slots["r"] == {"pos": "Infinity", "neg": "-Infinity", "nan": "NaN", "ok": 3.0}
