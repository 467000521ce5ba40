"""The serving path (issue 14): nothing CPU-bound on the event loop, admission control, deadlines,
and work of clients that left never reaching a model or a knowledge base; LM metrics after aborts.

Each test drives a real uvicorn server on 127.0.0.1 (`api_live`) and looks inside the runtime (batcher
counters, the engine's queues, the metrics registry) to see what ran. The scenarios are the cases in
tests/regressions/cases/serving/ (scripts against a running server).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest
import torch
from api_live import DIGITS_ONNX, LiveServer, make_settings, serve

from workbench.serving import Serving


def metric(name: str, **labels: str) -> float:
    """Sum of the samples of `name` with these labels in the runtime registry (0 when absent)."""
    from neural.metrics import METRICS_REGISTRY

    total = 0.0
    for fam in METRICS_REGISTRY.collect():
        for s in fam.samples:
            if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()):
                total += s.value
    return total


class SlowMLP(torch.nn.Module):
    """A real (seeded, untrained) MLP whose single row costs several milliseconds on one thread."""

    def __init__(self, width: int = 2048, depth: int = 12) -> None:
        super().__init__()
        torch.manual_seed(1)
        self.first = torch.nn.Linear(64, width)
        self.layers = torch.nn.ModuleList(torch.nn.Linear(width, width) for _ in range(depth))
        self.head = torch.nn.Linear(width, 10)

    def forward(self, pixels: torch.Tensor) -> torch.Tensor:
        x = torch.tanh(self.first(pixels))
        for layer in self.layers:
            x = torch.tanh(layer(x))
        return self.head(x)


SLOW_PIPELINE = """
name: slow_digit
nodes:
  - id: scan
    type: input
    schema: {type: object, required: [pixels], properties: {pixels: {type: array, minItems: 64, maxItems: 64}}}
  - id: read
    type: model
    model: slow
    inputs: {pixels: "input.pixels"}
    facts:
      - template: digit
        slots: {label: "argmax(logits)"}
  - id: result
    type: output
    fields: {label: "digit.label"}
edges:
  - {from: scan, to: read}
  - {from: read, to: result}
"""


@pytest.fixture(scope="module")
def slow_server(tmp_path_factory) -> Iterator[LiveServer]:
    """A workbench with `slow` (SlowMLP, one row per batch) behind pipeline `slow_digit`, and the
    digits ONNX model; admission limit 4 per pipeline, default deadline 20 s."""
    from neural.batching import BatcherConfig
    from neural.loaders import load_onnx
    from workbench.workbench import Workbench

    tmp = tmp_path_factory.mktemp("serving")
    (tmp / "pipelines").mkdir()
    (tmp / "pipelines" / "slow_digit.yaml").write_text(SLOW_PIPELINE)
    settings = make_settings(tmp, serving={"pipeline_max_queue": 4, "predict_timeout_s": 20.0})
    wb = Workbench(
        settings, knowledge_base_dir=tmp / "kb", pipeline_dir=tmp / "pipelines", model_catalog=tmp / "x.yaml"
    )
    wb.register_model(
        "slow",
        SlowMLP(),
        example_inputs={"pixels": np.zeros((1, 64), np.float32)},
        output_names=["logits"],
        batcher_config=BatcherConfig(max_batch_size=1, max_queue_delay_ms=0, max_queue_size=1024, buckets=None),
    )
    wb.register_model_entry(load_onnx(DIGITS_ONNX, name="digits", task="classification", intra_op_threads=1))
    server = serve(Serving(wb, settings=settings, load_models=False, serve_demo_lm=False), settings)
    server.wb = wb
    yield server
    server.stop()
    wb.close()


def _fill_queue(wb, n: int) -> list:
    """Submit n rows straight to the slow model's batcher (in-process) so that it stays busy."""
    entry = wb.get_model("slow")
    return [entry.submit({"pixels": np.zeros(64, np.float32)}) for _ in range(n)]


def _drain(requests: list) -> None:
    for r in requests:
        r.result(120)


def test_predict_of_a_client_that_left_never_reaches_the_model(slow_server):
    wb = slow_server.wb
    ran0 = metric("workbench_model_batch_size_sum", model="slow")
    cancelled0 = metric("workbench_model_failures_total", model="slow", reason="cancelled")
    hogs = _fill_queue(wb, 150)
    with pytest.raises(httpx.TimeoutException):  # the client gives up while its row waits behind the hogs
        httpx.post(
            slow_server.url + "/v1/pipelines/slow_digit/predict",
            json={"input": {"pixels": [0.0] * 64}},
            timeout=0.5,
        )
    assert not hogs[-1].done(), "the hogs must still be running when the client leaves (make SlowMLP slower)"
    # the server sees the client leave and removes its row from the queue (a fixed 0.3 s sleep after the
    # drain gave a loaded machine too little time to count it)
    _wait_for(
        lambda: (
            metric("workbench_model_failures_total", model="slow", reason="cancelled") - cancelled0 == 1
            and metric("workbench_pipeline_requests_admitted", pipeline="slow_digit") == 0
        ),
        120,
    )
    _drain(hogs)
    assert metric("workbench_model_batch_size_sum", model="slow") - ran0 == 150  # only the hogs ran
    assert metric("workbench_model_failures_total", model="slow", reason="cancelled") - cancelled0 == 1


def test_predict_timeout_s_answers_504_and_its_row_never_runs(slow_server):
    wb = slow_server.wb
    ran0 = metric("workbench_model_batch_size_sum", model="slow")
    hogs = _fill_queue(wb, 100)
    r = httpx.post(
        slow_server.url + "/v1/pipelines/slow_digit/predict",
        json={"input": {"pixels": [0.0] * 64}, "timeout_s": 0.3},
        timeout=30,
    )
    assert r.status_code == 504, r.text
    assert r.json()["error"]["code"] == "timeout" and "timeout_s=0.3" in r.json()["error"]["message"]
    _drain(hogs)
    time.sleep(0.3)
    assert metric("workbench_model_batch_size_sum", model="slow") - ran0 == 100  # only the hogs ran


def test_admission_limit_answers_429_with_retry_after_and_admits_again(slow_server):
    wb = slow_server.wb
    hogs = _fill_queue(wb, 60)
    answers: list[httpx.Response] = []

    def client() -> None:
        answers.append(
            httpx.post(
                slow_server.url + "/v1/pipelines/slow_digit/predict", json={"input": {"pixels": [0.0] * 64}}, timeout=60
            )
        )

    threads = [threading.Thread(target=client) for _ in range(4)]  # the limit is 4 per pipeline
    for t in threads:
        t.start()
    deadline = time.monotonic() + 10
    while metric("workbench_pipeline_requests_admitted", pipeline="slow_digit") < 4 and time.monotonic() < deadline:
        time.sleep(0.02)
    extra = httpx.post(slow_server.url + "/v1/pipelines/slow_digit/predict", json={"input": {"pixels": [0.0] * 64}})
    assert extra.status_code == 429, extra.text
    assert int(extra.headers["Retry-After"]) >= 1
    assert extra.json()["error"]["code"] == "queue_full" and "limit is 4" in extra.json()["error"]["message"]
    for t in threads:
        t.join(60)
    _drain(hogs)
    assert [a.status_code for a in answers] == [200] * 4
    again = httpx.post(slow_server.url + "/v1/pipelines/slow_digit/predict", json={"input": {"pixels": [0.0] * 64}})
    assert again.status_code == 200 and again.json()["outputs"]["label"] in range(10)


def test_v2_infer_of_a_client_that_timed_out_never_runs(slow_server):
    """Triton server #7532: a tritonclient request whose network_timeout fired while queued still ran."""
    import tritonclient.http as th
    from tritonclient.utils import InferenceServerException

    wb = slow_server.wb
    ran0 = metric("workbench_model_batch_size_sum", model="slow")
    hogs = _fill_queue(wb, 120)
    x = th.InferInput("pixels", [5, 64], "FP32")
    x.set_data_from_numpy(np.zeros((5, 64), np.float32))
    with pytest.raises((InferenceServerException, TimeoutError, OSError, Exception)):
        th.InferenceServerClient(slow_server.host_port, network_timeout=0.3).infer("slow", [x])
    assert not hogs[-1].done()
    _drain(hogs)
    time.sleep(0.5)
    assert metric("workbench_model_batch_size_sum", model="slow") - ran0 == 120  # the 5 rows never ran


@pytest.fixture(scope="module")
def minilm_process(tmp_path_factory) -> Iterator[tuple[str, Path]]:
    """MiniLM served by a separate server process (a server in the test's own process would share
    its GIL with the probing client, which hides a blocked event loop). Yields its URL and its
    folder (tests/api/minilm_server.py: the port it bound, the tokeniser's hold and release files)."""
    import subprocess
    import sys

    tmp = tmp_path_factory.mktemp("minilm")
    log = open(tmp / "server.log", "w")  # noqa: SIM115 - closed below
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("minilm_server.py")), str(tmp), str(tmp / "db.sqlite3")],
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, (tmp / "server.log").read_text()
            if (tmp / "port").exists():  # the port the server bound (no free-port pick that another process can take)
                url = f"http://127.0.0.1:{(tmp / 'port').read_text()}"
                try:
                    if httpx.get(url + "/readyz").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
            assert time.monotonic() < deadline, "server did not become ready"
            time.sleep(0.2)
        yield url, tmp
    finally:
        proc.terminate()
        proc.wait(30)
        log.close()


def test_tokenising_a_large_text_does_not_block_the_event_loop(minilm_process):
    """An 8 MiB text to MiniLM over /v2: /healthz answers while it is tokenised (the server holds
    the tokeniser until the test has its answer), and the answer is the embedding of the text's
    first 512 tokens."""
    url, folder = minilm_process
    short = {"inputs": [{"name": "text", "shape": [1], "datatype": "BYTES", "data": ["word " * 600]}]}
    same = httpx.post(url + "/v2/models/minilm/infer", json=short, timeout=60).json()  # warm-up too
    text = "word " * (8 * 1024 * 1024 // 5)
    body = {"inputs": [{"name": "text", "shape": [1], "datatype": "BYTES", "data": [text]}]}
    result: list[httpx.Response] = []

    def big() -> None:
        result.append(httpx.post(url + "/v2/models/minilm/infer", json=body, timeout=300))

    t = threading.Thread(target=big)
    t.start()
    try:
        _wait_for(lambda: (folder / "tokenising").exists() or not t.is_alive(), 120)
        assert (folder / "tokenising").exists(), result[0].text[:300] if result else "no answer"
        # tokenisation is under way and held: a loop that ran it could not answer (was: one probe waited
        # for the whole tokenisation, 14 s measured; a wall-clock bound on the probes flaked under load)
        assert httpx.get(url + "/healthz", timeout=60).status_code == 200
        assert t.is_alive() and not (folder / "release").exists()
    finally:
        (folder / "release").touch()
        t.join(300)
    assert result[0].status_code == 200, result[0].text[:300]
    # the same 512 tokens as the short text, one row, one batch: the same answer to the last bit
    assert result[0].json()["outputs"] == same["outputs"]


# ---- generation ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def busy_lm_server(tmp_path_factory, demo_lm_dir) -> Iterator[LiveServer]:
    """The demo LM with 2 running slots (so a third request waits in the queue), queue deadline 1.5 s."""
    from neural.generation import EngineConfig

    tmp = tmp_path_factory.mktemp("lm")
    settings = make_settings(tmp, serving={"generation_queue_timeout_s": 1.5})
    config = EngineConfig(max_num_seqs=2, num_kv_blocks=256, block_size=16, max_model_len=1024, num_threads=1)
    serving = Serving(
        None,
        settings=settings,
        load_models=False,
        serve_demo_lm=False,
        max_pending_generations=16,
        load=lambda s: s.add_engine("demo-lm", demo_lm_dir, config),
    )
    server = serve(serving, settings)
    server.serving = serving
    yield server
    server.stop()


LONG = {"model": "demo-lm", "max_tokens": 900, "ignore_eos": True, "temperature": 0, "stream": True}


def _hogs(url: str, n: int) -> tuple[list[threading.Thread], threading.Event]:
    """n streaming generations that occupy the engine's n running slots until `stop` is set;
    returns once every one of them is producing tokens."""
    stop = threading.Event()
    lines = [0] * n

    def hog(i: int) -> None:
        with httpx.Client(timeout=300) as cl:
            with cl.stream("POST", url + "/v1/completions", json={**LONG, "prompt": f"ROMEO {i}:\n"}) as r:
                for _ in r.iter_lines():
                    lines[i] += 1
                    if stop.is_set():
                        return

    ts = [threading.Thread(target=hog, args=(i,), daemon=True) for i in range(n)]
    for t in ts:
        t.start()
    _wait_for(lambda: min(lines) >= 4)
    return ts, stop


def _wait_for(cond, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not cond():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.05)


def test_queued_generation_of_a_client_that_left_is_removed(busy_lm_server):
    """vLLM PR 7111: a request waiting in the engine's queue leaves with its client (never prefilled)."""
    url = busy_lm_server.url
    ts, stop = _hogs(url, 2)
    _wait_for(lambda: metric("workbench_num_requests_running", model="demo-lm") == 2)
    ttft0 = metric("workbench_time_to_first_token_seconds_count", model="demo-lm")
    aborts0 = metric("workbench_request_success_total", model="demo-lm", finished_reason="abort")
    with pytest.raises(httpx.TimeoutException):
        httpx.post(
            url + "/v1/completions",
            json={**LONG, "stream": False, "prompt": "abandoned", "max_tokens": 50},
            timeout=0.5,
        )
    _wait_for(lambda: metric("workbench_num_requests_waiting", model="demo-lm") == 0, 60)
    stop.set()
    for t in ts:
        t.join(60)
    # the hogs' streams closed: the engine goes idle (a request still queued would be prefilled first)
    _wait_for(lambda: metric("workbench_num_requests_running", model="demo-lm") == 0, 60)
    assert metric("workbench_num_requests_waiting", model="demo-lm") == 0
    assert metric("workbench_time_to_first_token_seconds_count", model="demo-lm") - ttft0 == 0
    assert metric("workbench_request_success_total", model="demo-lm", finished_reason="abort") - aborts0 >= 1


def test_generation_waiting_past_the_queue_deadline_gets_504(busy_lm_server):
    """vLLM issue 16391: a server-side queue deadline (0.3 s here: shorter than the hogs' 900 tokens)."""
    url = busy_lm_server.url
    settings = busy_lm_server.serving.settings.serving
    old, settings.generation_queue_timeout_s = settings.generation_queue_timeout_s, 0.3
    ts, stop = _hogs(url, 2)
    _wait_for(lambda: metric("workbench_num_requests_running", model="demo-lm") == 2)
    t0 = time.monotonic()
    r = httpx.post(
        url + "/v1/completions", json={**LONG, "stream": False, "prompt": "late", "max_tokens": 5}, timeout=60
    )
    waited = time.monotonic() - t0
    stop.set()
    settings.generation_queue_timeout_s = old
    for t in ts:
        t.join(60)
    assert r.status_code == 504, r.text
    assert "generation_queue_timeout_s" in r.json()["error"]["message"]
    assert 0.25 < waited < 30


def test_lm_gauges_are_zero_after_an_abort_on_an_idle_engine(busy_lm_server):
    url = busy_lm_server.url
    with httpx.Client(timeout=30) as cl:
        with cl.stream("POST", url + "/v1/completions", json={**LONG, "prompt": "ROMEO:\n", "max_tokens": 1000}) as r:
            it = r.iter_lines()
            for _ in range(8):
                next(it)
    _wait_for(  # the gauges reach zero once the engine has handled the abort (not stuck at their last values)
        lambda: (
            metric("workbench_num_requests_running", model="demo-lm") == 0
            and metric("workbench_num_requests_waiting", model="demo-lm") == 0
            and metric("workbench_kv_cache_usage_perc", model="demo-lm") == 0
        )
    )
    prompt_tokens = metric("workbench_prompt_tokens_total", model="demo-lm")
    assert prompt_tokens > 0  # counted for the aborted requests too
    assert metric("workbench_iteration_tokens_count", model="demo-lm") > 0
