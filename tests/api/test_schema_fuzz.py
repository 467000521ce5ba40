"""schemathesis against the OpenAPI document, on a real uvicorn server on 127.0.0.1 (issue 16).

A real server rather than schemathesis's ASGI transport: the request limits are a pure ASGI
middleware reading uvicorn's `receive` messages, and uvicorn's own HTTP parsing (Content-Length,
chunked bodies, header bytes) is part of what must not crash, so the fuzzer goes through both.

Bounded and seeded: `derandomize=True` (Hypothesis derives its examples from the test's name, so
a run is repeatable), a fixed number of examples per operation, no example database. Each
operation's examples must all get an answer that is not 5xx and that matches the response
schema and content type the document declares for its status. The tally (tried / failed /
crashed) is written to `$WORKBENCH_FUZZ_REPORT` when set, for the figures in docs/api.md.
"""

from __future__ import annotations

import json
import os
import shutil
from collections import Counter
from pathlib import Path

import pytest
import schemathesis
from api_live import ROOT, LiveServer, make_settings
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import content_type_conformance, not_a_server_error, response_schema_conformance
from schemathesis.core.failures import FailureGroup

from api.app import create_app
from workbench.serving import Serving

EXAMPLES = int(os.environ.get("WORKBENCH_FUZZ_EXAMPLES", "25"))
TALLY: Counter[str] = Counter()


@pytest.fixture(scope="module")
def fuzz_server(tmp_path_factory):
    """A server over copies of the shipped knowledge bases and pipelines (the fuzzer writes there),
    no API keys (so write endpoints are fuzzed too), models loaded on first use."""
    from workbench import Workbench

    tmp = tmp_path_factory.mktemp("fuzz")
    kb_dir, pipe_dir = tmp / "knowledge_bases", tmp / "pipelines"
    shutil.copytree(ROOT / "knowledge_bases", kb_dir, ignore=shutil.ignore_patterns("bench"))
    shutil.copytree(ROOT / "pipelines", pipe_dir)
    s = make_settings(tmp, knowledge_base_dir=kb_dir, pipeline_dir=pipe_dir)
    wb = Workbench(s)
    server = LiveServer(create_app(serving=Serving(wb, settings=s, load_models=False, serve_demo_lm=False), settings=s))
    server.start()
    yield server
    server.stop()
    wb.close()
    report = os.environ.get("WORKBENCH_FUZZ_REPORT")
    if report:
        Path(report).write_text(json.dumps(dict(TALLY), indent=1))


def _fuzz_operation(op, mode) -> list[str]:
    """Run `EXAMPLES` seeded examples of one operation in one generation mode; the problems found."""
    problems: list[str] = []

    @settings(
        max_examples=EXAMPLES, derandomize=True, database=None, deadline=None, suppress_health_check=list(HealthCheck)
    )
    @given(case=op.as_strategy(generation_mode=mode))
    def run(case) -> None:
        TALLY["tried"] += 1
        try:
            response = case.call(timeout=60)
        except Exception as exc:  # no answer at all: the connection dropped or the server died
            TALLY["crashed"] += 1
            problems.append(f"{op.label} ({mode.value}): no answer: {type(exc).__name__}: {exc}")
            return
        TALLY[f"status_{response.status_code // 100}xx"] += 1
        try:
            case.validate_response(
                response, checks=[not_a_server_error, response_schema_conformance, content_type_conformance]
            )
        except (Exception, FailureGroup) as exc:
            TALLY["failed"] += 1
            problems.append(f"{op.label} ({mode.value}): {response.status_code}: {str(exc)[:600]}")

    try:
        run()
    except Unsatisfiable:  # nothing in this operation can be made invalid (no parameters, no body)
        TALLY["operations_without_negative_cases"] += 1
    return problems


def test_no_5xx_and_answers_match_their_schemas(fuzz_server) -> None:
    """Every operation, valid (positive) and invalid (negative) requests: no 5xx, no dropped
    connection, each answer matching the schema the document declares for its status."""
    schema = schemathesis.openapi.from_url(f"{fuzz_server.url}/openapi.json")
    problems: list[str] = []
    operations = [r.ok() for r in schema.get_all_operations()]
    assert len(operations) >= 25
    for op in operations:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            problems += _fuzz_operation(op, mode)
    assert fuzz_server.server.started and not fuzz_server.server.should_exit
    assert not problems, f"{len(problems)} problem(s):\n" + "\n".join(sorted(set(problems))[:40])
