"""The predict fast path (api/predict_fast.py) answers plain single-input predicts as the route does.

Each check sends the same request twice to a real server: once plain (the fast path answers) and
once with `?explain=false` (same meaning; a query string sends it through FastAPI's route), and
compares status, headers and JSON, key order included, apart from ids, times and timings.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from api_live import API_KEY, make_settings, serve

from api.predict_fast import PredictFastPath
from workbench.demo.digits_data import heldout_sequences
from workbench.serving import Serving

PATH = "/v1/pipelines/demo_digits/predict"
VARYING = {"run_id", "started_at", "duration_s", "timings", "seconds", "queue_ms", "compute_ms", "request_id", "at"}
VARYING |= {"latency_s", "queue_s", "compute_s", "batch_id"}


@pytest.fixture(scope="module")
def server(digits_server):
    return digits_server


def _fast_path(app: Any) -> PredictFastPath:
    layer = app.middleware_stack
    while not isinstance(layer, PredictFastPath):
        layer = layer.app
    return layer


def _stable(doc: Any) -> Any:
    """`doc` without the fields that differ between two runs of the same input (ids, times)."""
    if isinstance(doc, dict):
        return [(k, _stable(v)) for k, v in doc.items() if k not in VARYING]  # a list: key order counts
    if isinstance(doc, list):
        return [_stable(v) for v in doc]
    return doc


def _both(url: str, **kwargs: Any) -> tuple[httpx.Response, httpx.Response]:
    fast = httpx.post(url, timeout=60, **kwargs)
    routed = httpx.post(url, params={"explain": "false"}, timeout=60, **kwargs)
    return fast, routed


def _same(fast: httpx.Response, routed: httpx.Response) -> None:
    assert fast.status_code == routed.status_code, (fast.text, routed.text)
    assert [k for k, _ in fast.headers.multi_items()] == [k for k, _ in routed.headers.multi_items()]
    assert fast.headers["content-type"] == routed.headers["content-type"]
    assert fast.headers["x-request-id"]
    assert _stable(fast.json()) == _stable(routed.json())


def test_answers_equal_the_routes_and_are_counted(server):
    fast_path = _fast_path(server.app)
    before = fast_path.answered
    inputs = [s.to_input() for s in heldout_sequences(length=8)][:6]
    for x in inputs:
        fast, routed = _both(server.url + PATH, json={"input": x})
        _same(fast, routed)
        assert fast.json()["outputs"]["action"] in ("accept", "corrected", "review", "rejected")
        assert fast.json()["explanation"]["gates"]  # demo_digits answers its explanation
    assert fast_path.answered - before == len(inputs)  # the routed twins were not answered here
    # a client's request id is echoed by both
    r = httpx.post(server.url + PATH, json={"input": inputs[0]}, headers={"X-Request-Id": "abc-123"}, timeout=60)
    assert r.headers["x-request-id"] == "abc-123"


def test_the_run_is_recorded_as_the_routes(server):
    x = heldout_sequences(length=8)[0].to_input()
    fast, routed = _both(server.url + PATH, json={"input": x})
    a = httpx.get(server.url + "/v1/runs/" + fast.json()["run_id"], timeout=30)
    b = httpx.get(server.url + "/v1/runs/" + routed.json()["run_id"], timeout=30)
    assert a.status_code == b.status_code == 200
    assert _stable(a.json()) == _stable(b.json())
    assert _stable(a.json())  # not empty


@pytest.mark.parametrize(
    "content",
    [
        b'{"input": {"id": "1", "images": []}',  # not JSON: 422 with line and column
        b'{"input": {"id": "1"}, "surplus": 1}',  # an unknown field
        b'{"inputs": []}',  # a batch below its minimum
        b"[]",  # not an object
        b"",  # no body
        b'{"input": {"id": "1", "images": [[0.0]]}, "timeout_s": -1}',  # out of range
    ],
)
def test_bodies_the_route_refuses_are_refused_alike(server, content):
    fast_path = _fast_path(server.app)
    before = fast_path.answered
    fast, routed = _both(server.url + PATH, content=content, headers={"Content-Type": "application/json"})
    assert fast.status_code == 422, fast.text
    _same(fast, routed)
    assert fast_path.answered == before  # handed to the route


def test_input_errors_unknown_pipelines_and_names_answer_alike(server):
    bad_input = {"input": {"id": "1", "images": [[0.5] * 63]}}  # an image of 63 pixels
    fast, routed = _both(server.url + PATH, json=bad_input)
    assert fast.status_code == 422
    _same(fast, routed)
    assert fast.json()["error"]["param"].startswith("body.input")
    fast, routed = _both(server.url + "/v1/pipelines/no_such_pipeline/predict", json=bad_input)
    assert fast.status_code == 404
    _same(fast, routed)
    fast, routed = _both(server.url + "/v1/pipelines/bad.yaml/predict", json=bad_input)
    assert fast.status_code == 422
    _same(fast, routed)


def test_batches_and_streams_go_to_the_route(server):
    fast_path = _fast_path(server.app)
    before = fast_path.answered
    xs = [s.to_input() for s in heldout_sequences(length=8)][:2]
    r = httpx.post(server.url + PATH, json={"inputs": xs}, timeout=60)
    assert r.status_code == 200 and len(r.json()["results"]) == 2
    r = httpx.post(server.url + PATH, json={"input": xs[0], "stream": True}, timeout=60)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
    assert fast_path.answered == before


def test_http_metrics_label_the_route(server):
    httpx.post(server.url + PATH, json={"input": heldout_sequences(length=8)[0].to_input()}, timeout=60)
    text = httpx.get(server.url + "/metrics", timeout=30).text
    line = 'workbench_http_requests_total{method="POST",route="/v1/pipelines/{name}/predict",status="200"}'
    assert line in text


def test_the_predict_key_is_checked_when_required(tmp_path):
    settings = make_settings(tmp_path, api_keys=[API_KEY], require_key_for_predict=True)
    server = serve(Serving(settings=settings, load_models=["demo-digits"], serve_demo_lm=False), settings)
    try:
        body = {"input": heldout_sequences(length=8)[0].to_input()}
        fast, routed = _both(server.url + PATH, json=body)
        assert fast.status_code == 401
        _same(fast, routed)
        assert fast.headers["www-authenticate"] == routed.headers["www-authenticate"]
        auth = {"Authorization": f"Bearer {API_KEY}"}
        fast, routed = _both(server.url + PATH, json=body, headers=auth)
        assert fast.status_code == 200
        _same(fast, routed)
        assert _fast_path(server.app).answered == 2
    finally:
        server.stop()


def test_json_parsing_is_the_routes(server):
    """The fast path parses with `json.loads`, as FastAPI does: NaN literals and duplicate keys
    are taken the same way (the input check then refuses the NaN, naming its field)."""
    content = b'{"input": {"id": "1", "images": [[NaN]]}, "input": {"id": "2", "images": [[NaN]]}}'
    fast, routed = _both(server.url + PATH, content=content, headers={"Content-Type": "application/json"})
    _same(fast, routed)
    assert fast.status_code == 422
    assert json.loads(fast.text)["error"]["param"].startswith("body.input")


EDGE_BODIES = [
    b'{"input": {"a": 1, "a": 2}}',  # duplicate keys: the last one
    b'{"input": {"x": 1e400, "y": -0.0, "z": -0, "w": 1E5, "v": 123456789012345678901234567890}}',
    b'{"input": {"x": Infinity, "y": -Infinity}}',
    b'{"input": {"x": 1.7976931348623157e308, "y": 5e-324, "z": 2.2250738585072011e-308}}',
    b'{"input": {"s": "\\u00e9\\n\\/", "e": "\\ud83d\\ude00", "t": true, "n": null}}',
    b'{"input": {"s": "a\tb"}}',  # a raw control character in a string: refused
    b'{"input": {"x": 01}}',
    b'{"input": {"x": .5}}',
    b'{"input": {"x": [1,]}}',
    b'{"input": {}}x',
    b"{'input': {}}",
    b'\xef\xbb\xbf{"input": {}}',  # a BOM: json.loads takes it, pydantic-core refuses (the route answers)
    b' {"input": {}} ',
]
FIELD_VALUES = ["true", "0", "1", "2", "1.5", '"true"', '"1"', '"yes"', '"off"', '"5"', '"inf"', '"nan"', "null"]
FIELD_VALUES += ["1e400", "NaN", "[]", "{}", "3600.0000001", '"3600"', '""']


def _route_parse(body: bytes) -> str:
    from api.schemas.pipelines import PredictRequest

    try:
        return repr(PredictRequest.model_validate(json.loads(body)).model_dump())
    except Exception:
        return "refused"


def _fast_parse(body: bytes) -> str:
    from api.schemas.pipelines import PredictRequest

    try:
        return repr(PredictRequest.model_validate_json(body).model_dump())
    except Exception:
        return "refused"


def test_the_fast_parse_takes_what_the_route_takes_or_hands_it_over():
    """What pydantic-core accepts, `json.loads` + `model_validate` (the route) accepts as the same
    values; what it refuses goes to the route (so only the first half can differ: never)."""
    bodies = list(EDGE_BODIES)
    bodies += [
        f'{{"input": {{}}, "{f}": {v}}}'.encode()
        for f in ("explain", "stream", "timeout_s", "version")
        for v in FIELD_VALUES
    ]
    import random
    import struct

    rnd = random.Random(14)
    for _ in range(3000):
        x = struct.unpack("d", struct.pack("Q", rnd.getrandbits(64)))[0]
        if x == x and abs(x) != float("inf"):
            bodies += [f'{{"input": {{"x": {t}}}}}'.encode() for t in (repr(x), f"{x:.6g}", f"{x:.3e}")]
    for body in bodies:
        fast = _fast_parse(body)
        assert fast == "refused" or fast == _route_parse(body), body
