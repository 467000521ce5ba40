"""Regression (n12): a client that disconnected from `POST /v1/kb/NAME/run` on a runaway program left the
evaluation running in its worker thread until its `timeout_s` (the server stayed responsive, but a core
stayed busy for nobody, and the knowledge base's CLIPS environment with it). Now the disconnect halts the
evaluation as its time limit would (`chaining.forward.Cancellation`, the `clips-watchdog`'s halt), and the
server logs it when the evaluation stops. Over a real uvicorn server on 127.0.0.1; the observable is the
server's log record of the stopped evaluation (and its own measure of how long it ran), not a client timer."""

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

from chaining.forward import Cancellation, EvaluationCancelled, ForwardEngine  # noqa: E402
from rules import load_knowledge_base  # noqa: E402

# A right-hand side that never returns: only a halt from another thread stops it.
SPIN = "(deftemplate go (slot n))\n(defrule spin (go (n ?n)) => (bind ?i 0) (while TRUE do (bind ?i (+ ?i 1))))\n"
TIMEOUT_S = 240  # the run's own time limit: the disconnect must stop it long before
STOPPED = re.compile(r"knowledge base 'spin': evaluation cancelled by its caller after ([0-9.]+) s")


def _stopped(caplog) -> list[float]:
    return [float(m.group(1)) for r in caplog.records if (m := STOPPED.search(r.getMessage()))]


def test_a_disconnected_client_stops_the_evaluation(tmp_path, caplog) -> None:
    caplog.set_level(logging.INFO, logger="workbench.serving")
    (tmp_path / "kb").mkdir()
    (tmp_path / "kb" / "spin.clp").write_text(SPIN)
    with served_workbench(make_settings(tmp_path), knowledge_base_dir=tmp_path / "kb") as live:
        body = {"facts": [{"template": "go", "slots": {"n": 1}}], "timeout_s": TIMEOUT_S}
        with pytest.raises(httpx.ReadTimeout):  # the client gives up and closes its connection
            httpx.post(live.url + "/v1/kb/spin/run", json=body, timeout=httpx.Timeout(60, read=1.0))
        deadline = time.monotonic() + 60  # generous for a loaded machine; the run's own limit is 240 s
        while not _stopped(caplog) and time.monotonic() < deadline:
            time.sleep(0.05)
        # before the fix: no such record until the run's time limit passed (240 s)
        (ran_s,) = _stopped(caplog)
        assert ran_s < TIMEOUT_S / 4, ran_s
        # the server and the knowledge base still answer: a run that finishes is answered 200
        r = httpx.post(live.url + "/v1/kb/spin/run", json={"facts": [], "timeout_s": 30}, timeout=60)
        assert r.status_code == 200 and r.json()["firings"] == [], r.text


def test_a_cancelled_evaluation_is_halted_and_the_next_one_runs(tmp_path) -> None:
    """The engine part alone: `cancel()` from another thread halts a right-hand side that never returns
    (EvaluationCancelled with the partial result); the environment's next evaluation is not halted by it."""
    (tmp_path / "spin.clp").write_text(SPIN)
    engine = ForwardEngine.from_knowledge_base(load_knowledge_base(tmp_path / "spin.clp"))
    try:
        cancel = Cancellation()
        started = threading.Timer(0.3, cancel.cancel)
        started.start()
        with pytest.raises(EvaluationCancelled) as info:
            engine.evaluate([{"template": "go", "slots": {"n": 1}}], timeout=TIMEOUT_S, cancel=cancel)
        assert info.value.fired == 1 and [f.rule for f in info.value.partial.firings] == ["spin"]
        cancel.cancel()  # late: the next evaluation of the same environment is not halted
        assert engine.evaluate([], cancel=Cancellation()).firings == []
        with pytest.raises(EvaluationCancelled, match="before it started"):
            engine.evaluate([{"template": "go", "slots": {"n": 1}}], cancel=cancel)
    finally:
        engine.close()
