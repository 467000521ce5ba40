"""Regression: a body that is not valid JSON was reported as `body[32]: JSON decode error` (a
character offset dressed as a list index, no reason); an OpenAI `seed` beyond 64 bits passed
validation and came back as `Overflow when unpacking long long` blamed on `prompt`. Now: line,
column and the parser's reason; `body.seed` named with the accepted range. (OpenAI routes answer
bad requests with 400 `invalid_request`, as OpenAI and vLLM do; other routes with 422.)"""

from __future__ import annotations

from fastapi.testclient import TestClient

from api.app import create_app
from neural.registry import ModelRegistry
from workbench.config import load_settings
from workbench.serving import Serving


def _client(tmp_path) -> TestClient:
    settings = load_settings(database_url=f"sqlite:///{tmp_path / 'api.sqlite3'}")
    # no demo LM: the body is refused before any model is looked up (its start-up loading only made each
    # client's close wait for it)
    serving = Serving(settings=settings, registry=ModelRegistry(), serve_demo_lm=False)
    return TestClient(create_app(serving=serving, settings=settings))


def test_bad_json_names_line_and_column(tmp_path):
    with _client(tmp_path) as c:
        r = c.post(
            "/v1/completions", content='{"model": "m",\n "prompt": }', headers={"content-type": "application/json"}
        )
        assert r.status_code == 400
        err = r.json()["error"]
        assert err["code"] == "invalid_request" and err["param"] == "body"
        assert err["message"] == "body: not valid JSON at line 2, column 12: Expecting value", err


def test_seed_out_of_64_bit_range(tmp_path):
    with _client(tmp_path) as c:
        r = c.post("/v1/completions", json={"model": "m", "prompt": "x", "seed": 2**70})
        assert r.status_code == 400
        err = r.json()["error"]
        assert err["param"] == "body.seed" and "less than or equal to 9223372036854775807" in err["message"], err


def test_bad_json_on_other_routes_is_422(tmp_path):
    with _client(tmp_path) as c:
        r = c.post("/v1/pipelines/x/predict", content='{"input":\n  [1,}', headers={"content-type": "application/json"})
        assert r.status_code == 422
        err = r.json()["error"]
        assert err["code"] == "validation_failed" and err["message"].startswith("body: not valid JSON at line 2"), err
