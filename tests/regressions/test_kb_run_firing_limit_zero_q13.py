"""Regression (n10 #12): `kb run --max-firings 0` printed "0 firings" and then failed with "runaway
knowledge base: stopped after 0 firings (limit 0)", exit 2 (the API answered 422 the same way).
CLIPS's `(run 0)` fires no rule and is no error, and `(run -1)` has no limit; the firing limit now
reads the same way in the CLI, the engines and the API (clipspy is the oracle)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import clips
import httpx
import pytest
from typer.testing import CliRunner

from chaining.forward import EngineConfig, ExpertaEngine, ForwardEngine
from cli.app import app

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "api"))
from api_live import make_settings, served_workbench  # noqa: E402

CASES = Path(__file__).parent / "cases" / "rules"
KB = CASES / "animals_limit.clp"
FACTS = CASES / "animals_limit.facts.json"


def _clips(limit: int) -> tuple[int, list[tuple[str, dict]]]:
    """Rules fired by CLIPS's `(run limit)` after (reset) and the facts, and the working memory then."""
    env = clips.Environment()
    env.load(str(KB))
    env.reset()
    for f in json.loads(FACTS.read_text()):
        env.find_template(f["template"]).assert_fact(**{k: clips.Symbol(v) for k, v in f["slots"].items()})
    fired = env.run(limit)
    facts = [(f.template.name, {k: str(v) for k, v in dict(f).items()}) for f in env.facts()]
    return fired, facts


def _ours(doc: dict) -> list[tuple[str, dict]]:
    return [(f["template"], {k: str(v) for k, v in f["slots"].items()}) for f in doc["facts"]]


def _kb_run(*args: str):
    return CliRunner().invoke(app, ["kb", "run", str(KB), "--facts", str(FACTS), "--json", *args])


def test_zero_fires_nothing_and_is_not_an_error():
    fired, facts = _clips(0)
    assert fired == 0 and facts  # the oracle: (run 0) fires none and leaves the input in working memory
    r = _kb_run("--max-firings", "0")
    assert r.exit_code == 0, r.output
    assert "runaway" not in r.output
    doc = json.loads(r.stdout)
    assert doc["firings"] == [] and "error" not in doc
    assert sorted(map(repr, _ours(doc))) == sorted(map(repr, facts))


def test_a_negative_limit_is_no_limit_and_a_positive_one_still_stops_a_runaway():
    fired, facts = _clips(-1)
    assert fired > 2
    r = _kb_run("--max-firings", "-1")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert len(doc["firings"]) == fired
    assert sorted(map(repr, _ours(doc))) == sorted(map(repr, facts))
    r = _kb_run("--max-firings", "2")
    assert r.exit_code == 2 and "stopped after 2 firings (limit 2)" in r.output


def test_both_engines_read_the_limit_as_clips_does():
    engine = ForwardEngine.from_files([KB], config=EngineConfig(workers=1))
    facts = json.loads(FACTS.read_text())
    try:
        assert engine.evaluate(facts, max_firings=0).firings == []
        assert len(engine.evaluate(facts, max_firings=-1).firings) == _clips(-1)[0]
    finally:
        engine.close()

    from experta import Fact, KnowledgeEngine, Rule

    class Step(Fact):
        pass

    class Chain(KnowledgeEngine):
        @Rule(Step(n=1))
        def one(self):
            self.declare(Step(n=2))

        @Rule(Step(n=2))
        def two(self):
            self.declare(Step(n=3))

    experta = ExpertaEngine(Chain, fact_types={"step": Step}, config=EngineConfig(workers=1))
    start = [{"template": "step", "slots": {"n": 1}}]
    assert experta.evaluate(start, max_firings=0).firings == []
    assert len(experta.evaluate(start, max_firings=-1).firings) == 2


def test_the_api_answers_a_limit_of_zero_with_the_untouched_working_memory(tmp_path):
    kb_dir = tmp_path / "kb"
    kb_dir.mkdir()
    shutil.copy(KB, kb_dir / "animals_limit.clp")
    body = {"facts": json.loads(FACTS.read_text()), "max_firings": 0}
    with served_workbench(make_settings(tmp_path), knowledge_base_dir=kb_dir, pipeline_dir=tmp_path / "p") as live:
        r = httpx.post(live.url + "/v1/kb/animals_limit/run", json=body, timeout=60)
    assert r.status_code == 200, r.text
    doc = r.json()
    assert doc["firings"] == []
    assert sorted(map(repr, _ours(doc))) == sorted(map(repr, _clips(0)[1]))


@pytest.fixture(autouse=True, scope="module")
def _inputs_are_in_the_repository():
    assert KB.is_file() and FACTS.is_file()
