"""Regression (issue 14, k16): a pipeline's rules step already running when its client left (or its
`timeout_s` passed) ran on to the node's time limit for nobody, and the run was then recorded
(docs/serving.md, "a cancelled run can still be recorded"). Now the run's `Cancellation` reaches the rules
node: the CLIPS evaluation is halted (the `clips-watchdog`'s halt, as a time limit halts it), the server
logs it, and the run is not recorded (as a refused run: nothing half-done in the store). Over a real
uvicorn server on 127.0.0.1; the observables are the server's log record and the store."""

from __future__ import annotations

import logging
import re
import sys
import time
from pathlib import Path

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "api"))
from api_live import make_settings, served_workbench  # noqa: E402

# A right-hand side that never returns: only a halt from another thread stops it.
SPIN = "(deftemplate go (slot n))\n(defrule spin (go (n ?n)) => (bind ?i 0) (while TRUE do (bind ?i (+ ?i 1))))\n"
NODE_TIMEOUT_S = 240  # the rules node's own time limit: the cancel must stop it long before
PIPELINE = f"""name: spinner
nodes:
  - id: in
    type: input
    schema: {{type: object, properties: {{n: {{type: integer}}}}}}
    facts:
      - template: go
        when: "input.n != None"
        slots: {{n: "input.n"}}
  - id: loop
    type: rules
    knowledge_base: spin
    timeout_s: {NODE_TIMEOUT_S}
  - id: out
    type: output
    fields: {{gone: "count('go')"}}
edges:
  - {{from: in, to: loop}}
  - {{from: loop, to: out}}
"""
# A goal node whose proof runs for minutes: left-recursive reachability over a chain of given edges,
# `(path ?x nowhere)` tables all n^2/2 paths and then finds no answer.
DEEP = (
    "(defrule path-edge (edge ?x ?y) => (assert (path ?x ?y)))\n"
    "(defrule path-step (path ?x ?y) (edge ?y ?z) => (assert (path ?x ?z)))\n"
)
PROVER = f"""name: prover
nodes:
  - id: in
    type: input
    schema: {{type: object, properties: {{edges: {{type: array}}}}}}
    facts:
      - template: edge
        foreach: input.edges
        values: ["value[0]", "value[1]"]
  - id: find
    type: goal
    knowledge_base: deep
    goal: "(path ?x nowhere)"
    timeout_s: {NODE_TIMEOUT_S}
  - id: out
    type: output
    fields: {{proved: "find.proved"}}
edges:
  - {{from: in, to: find}}
  - {{from: find, to: out}}
"""
PROOF_STOPPED = re.compile(
    r"pipeline 'prover': run cancelled by its caller: node 'find': "
    r"proof of \(path \?x nowhere\) cancelled by its caller after ([0-9.]+) s and (\d+) steps"
)
STOPPED = re.compile(
    r"pipeline 'spinner': run cancelled by its caller: node 'loop': knowledge base 'spin': "
    r"evaluation cancelled by its caller after ([0-9.]+) s"
)


def _stopped(caplog) -> list[float]:
    return [float(m.group(1)) for r in caplog.records if (m := STOPPED.search(r.getMessage()))]


def _wait_stopped(caplog, count: int) -> list[float]:
    deadline = time.monotonic() + 60  # generous for a loaded machine; the node's own limit is 240 s
    while len(_stopped(caplog)) < count and time.monotonic() < deadline:
        time.sleep(0.05)
    return _stopped(caplog)


@pytest.fixture
def live(tmp_path):
    for folder in ("kb", "pipes"):
        (tmp_path / folder).mkdir()
    (tmp_path / "kb" / "spin.clp").write_text(SPIN)
    (tmp_path / "kb" / "deep.clp").write_text(DEEP)
    (tmp_path / "pipes" / "spinner.yaml").write_text(PIPELINE)
    (tmp_path / "pipes" / "prover.yaml").write_text(PROVER)
    settings = make_settings(tmp_path)
    with served_workbench(settings, knowledge_base_dir=tmp_path / "kb", pipeline_dir=tmp_path / "pipes") as server:
        yield server


def test_a_client_that_leaves_stops_the_rules_step_and_nothing_is_recorded(live, caplog) -> None:
    caplog.set_level(logging.INFO, logger="workbench.pipeline")
    url = live.url + "/v1/pipelines/spinner/predict"
    r = httpx.post(url, json={"input": {}}, timeout=60)  # no fact: nothing fires, the run is recorded
    assert r.status_code == 200 and r.json()["outputs"] == {"gone": 0}, r.text
    with pytest.raises(httpx.ReadTimeout):  # the client gives up and closes its connection
        httpx.post(url, json={"input": {"n": 1}, "timeout_s": 200}, timeout=httpx.Timeout(60, read=1.0))
    # before the fix: no such record; the evaluation ran to its 240 s limit and the run was recorded
    (ran_s,) = _wait_stopped(caplog, 1)
    assert ran_s < NODE_TIMEOUT_S / 4, ran_s
    # the request's deadline cancels the same way: 504, the evaluation halted, nothing recorded
    r = httpx.post(url, json={"input": {"n": 2}, "timeout_s": 0.5}, timeout=60)
    assert r.status_code == 504 and r.json()["error"]["code"] == "timeout", r.text
    assert len(_wait_stopped(caplog, 2)) == 2
    runs = httpx.get(live.url + "/v1/runs", params={"pipeline": "spinner"}, timeout=60).json()
    assert [run["status"] for run in runs["runs"]] == ["succeeded"], runs  # only the first, finished run
    r = httpx.post(url, json={"input": {}}, timeout=60)  # the knowledge base's environment still evaluates
    assert r.status_code == 200, r.text


def test_a_client_that_leaves_stops_the_goal_step_and_nothing_is_recorded(live, caplog) -> None:
    caplog.set_level(logging.INFO, logger="workbench.pipeline")
    url = live.url + "/v1/pipelines/prover/predict"
    r = httpx.post(url, json={"input": {"edges": [["a", "b"]]}}, timeout=60)  # a short proof: recorded
    assert r.status_code == 200 and r.json()["outputs"] == {"proved": False}, r.text
    # 800 edges: ~320,000 paths, tens of seconds of resolution; the client leaves after the proof started
    edges = [[f"n{i}", f"n{i + 1}"] for i in range(800)]
    with pytest.raises(httpx.ReadTimeout):  # the client gives up and closes its connection
        httpx.post(url, json={"input": {"edges": edges}, "timeout_s": 200}, timeout=httpx.Timeout(60, read=3.0))
    deadline = time.monotonic() + 60
    found: list[tuple[float, int]] = []
    while not found and time.monotonic() < deadline:
        time.sleep(0.05)
        found = [(float(m[1]), int(m[2])) for r in caplog.records if (m := PROOF_STOPPED.search(r.getMessage()))]
    ((ran_s, steps),) = found  # before the fix: none; the proof ran to its 240 s limit and was recorded
    assert ran_s < NODE_TIMEOUT_S / 4 and steps > 0, (ran_s, steps)
    runs = httpx.get(live.url + "/v1/runs", params={"pipeline": "prover"}, timeout=60).json()
    assert [run["status"] for run in runs["runs"]] == ["succeeded"], runs
