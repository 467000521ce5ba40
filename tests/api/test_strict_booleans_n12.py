"""Boolean request fields took strings and numbers: `{"explain": "yes"}` ran with an explanation,
`{"all": "no"}` searched for one answer, `{"stream": 1}` streamed (pydantic's lax mode). A JSON boolean is
now required, as for `timeout_s` (which takes no boolean): 422 (400 on the OpenAI routes) naming the field.
Against a real uvicorn on 127.0.0.1."""

from __future__ import annotations

import httpx
import pytest

CASES = [
    ("/v1/pipelines/nosuch/predict", {"input": {}, "explain": "yes"}, 422, "body.explain"),
    ("/v1/pipelines/nosuch/predict", {"input": {}, "stream": 1}, 422, "body.stream"),
    ("/v1/kb/nosuch/ask", {"goal": "(a ?x)", "all": "no"}, 422, "body.all"),
    ("/v1/consultations", {"knowledge_base": "nosuch", "goal": "(a ?x)", "all": "true"}, 422, "body.all"),
    ("/v1/completions", {"model": "nosuch", "prompt": "a", "stream": "yes"}, 400, "body.stream"),
    ("/v1/completions", {"model": "nosuch", "prompt": "a", "ignore_eos": 0}, 400, "body.ignore_eos"),
]


@pytest.mark.parametrize(("path", "body", "status", "param"), CASES)
def test_a_boolean_field_takes_only_true_or_false(pipeline_server, path, body, status, param) -> None:
    r = httpx.post(pipeline_server.url + path, json=body, timeout=30)
    assert r.status_code == status, r.text
    error = r.json()["error"]
    assert error["param"] == param and error["message"].startswith(param + ": Input should be a valid boolean")
