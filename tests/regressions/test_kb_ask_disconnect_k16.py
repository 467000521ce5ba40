"""Regression (issue 14, k16): a client that disconnected from `POST /v1/kb/NAME/ask` left the backward proof
running in its thread until the prover's time limit (30 s by default, for nobody), and the route had no
`timeout_s`. Now the prover takes a `Cancellation` (checked every 256 resolution steps; a CLIPS evaluation
in progress is halted by the watchdog), the disconnect cancels it and the server logs the stop with the
proof's seconds and steps. Over a real uvicorn server on 127.0.0.1; the observable is the server's log
record of the stopped proof (and its own measure of how long it ran), not a client timer."""

from __future__ import annotations

import logging
import re
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "api"))
from api_live import make_settings, served_workbench  # noqa: E402

from chaining.backward import ProofCancelled, ProverConfig, Session  # noqa: E402
from chaining.forward import Cancellation  # noqa: E402
from rules import knowledge_base_from_sources  # noqa: E402

# Left-recursive reachability (tabled): `(path ?x nowhere)` builds the whole path table of the chain,
# n^2/2 answers (800 edges: ~320,000, tens of seconds of resolution), and then finds no answer.
DEEP = (
    "(defrule path-edge (edge ?x ?y) => (assert (path ?x ?y)))\n"
    "(defrule path-step (path ?x ?y) (edge ?y ?z) => (assert (path ?x ?z)))\n"
)
EDGES = [{"template": "edge", "values": [f"n{i}", f"n{i + 1}"]} for i in range(800)]
TIMEOUT_S = 240  # the proof's own time limit: the disconnect must stop it long before
STOPPED = re.compile(
    r"knowledge base 'deep': proof of \(path \?x nowhere\) cancelled by its caller after ([0-9.]+) s and (\d+) steps"
)
# A `test` whose CLIPS function never returns: only a halt from another thread stops it.
SPIN = (
    "(deffunction spin () (while TRUE do (bind ?i 1)) TRUE)\n"
    "(defrule done-if (go ?x) (test (spin)) => (assert (done ?x)))\n"
)


def _stopped(caplog) -> list[tuple[float, int]]:
    return [(float(m.group(1)), int(m.group(2))) for r in caplog.records if (m := STOPPED.search(r.getMessage()))]


def test_a_disconnected_client_stops_the_proof(tmp_path, caplog) -> None:
    caplog.set_level(logging.INFO, logger="workbench.serving")
    (tmp_path / "kb").mkdir()
    (tmp_path / "kb" / "deep.clp").write_text(DEEP)
    with served_workbench(make_settings(tmp_path), knowledge_base_dir=tmp_path / "kb") as live:
        body = {"goal": "(path ?x nowhere)", "facts": EDGES, "timeout_s": TIMEOUT_S}
        with pytest.raises(httpx.ReadTimeout):  # the client gives up (after the proof started) and leaves
            httpx.post(live.url + "/v1/kb/deep/ask", json=body, timeout=httpx.Timeout(60, read=3.0))
        deadline = time.monotonic() + 60  # generous for a loaded machine; the proof's own limit is 240 s
        while not _stopped(caplog) and time.monotonic() < deadline:
            time.sleep(0.05)
        # before the fix: no such record, the proof ran on to its time limit
        ((ran_s, steps),) = _stopped(caplog)
        assert ran_s < TIMEOUT_S / 4 and steps > 0, (ran_s, steps)
        # the server and the knowledge base still answer: a proof that finishes is answered 200
        small = {"goal": "(path n0 n3)", "facts": EDGES[:5]}
        r = httpx.post(live.url + "/v1/kb/deep/ask", json=small, timeout=60)
        assert r.status_code == 200 and r.json()["proved"] is True, r.text
        # the request's own time limit: 504 `timeout`, naming the goal being proved then
        r = httpx.post(live.url + "/v1/kb/deep/ask", json={**body, "timeout_s": 0.5}, timeout=60)
        assert r.status_code == 504 and r.json()["error"]["code"] == "timeout", r.text
        assert "proof ran past 0.5 s" in r.json()["error"]["message"], r.text


def test_a_cancelled_proof_stops_between_steps_and_the_session_proves_again() -> None:
    kb = knowledge_base_from_sources("deep", [("deep.clp", DEEP)])
    session = Session(kb, facts=EDGES, config=ProverConfig(timeout=TIMEOUT_S))
    cancel = Cancellation()
    threading.Timer(0.3, cancel.cancel).start()
    with pytest.raises(ProofCancelled, match=r"cancelled by its caller after [0-9.]+ s and \d+ steps") as info:
        session.prove_sync("(path ?x nowhere)", cancel=cancel)
    assert info.value.steps > 0 and 0 < info.value.seconds < TIMEOUT_S / 4
    cancel.cancel()  # late: the session's next proof is not stopped by it
    assert session.prove_sync("(path n0 n3)", cancel=Cancellation()).answers
    with pytest.raises(ProofCancelled, match="before it started"):
        session.prove_sync("(path n0 n3)", cancel=cancel)


def test_a_cancel_halts_a_clips_evaluation_that_never_returns() -> None:
    kb = knowledge_base_from_sources("spin", [("spin.clp", SPIN)])
    session = Session(kb, facts=[{"template": "go", "values": [1]}], config=ProverConfig(timeout=TIMEOUT_S))
    cancel = Cancellation()
    threading.Timer(0.3, cancel.cancel).start()
    with pytest.raises(ProofCancelled, match=r"cancelled by its caller after [0-9.]+ s") as info:
        session.prove_sync("(done ?x)", cancel=cancel)
    assert info.value.seconds < TIMEOUT_S / 4
    # the environment was un-halted: the next evaluation runs (and is stopped by its own time limit)
    session.config = ProverConfig(timeout=0.2)
    from chaining.backward import ProofTimeout

    with pytest.raises(ProofTimeout):
        session.prove_sync("(done ?x)")
