"""Regression (n10, newcomer walk-through): `workbench run` loaded the pipeline's models inside the
first run(s), so the recorded latency of `run demo_intents --input ...` was 25,435 ms for a ~30 ms
run (`runs show`: embed 23,990 ms, while its model call computed in 827 ms), and `demo_generate`
7.4 s for 56 tokens. The CLI now loads the models of model and generate nodes before the first run,
as `serve` and `demo` do."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from cli.app import app


def test_models_are_loaded_before_the_first_run(monkeypatch):
    from workbench import Workbench

    seen: list[dict[str, bool]] = []
    original = Workbench.run_many

    async def spy(self, pipeline, items, **kwargs):
        seen.append({m: self.catalog.is_loaded(m) for m in ("demo-digits", "demo-lm")})
        return await original(self, pipeline, items, **kwargs)

    monkeypatch.setattr(Workbench, "run_many", spy)
    runner = CliRunner()
    blank = json.dumps({"images": [[0] * 64, [0] * 64]})  # the gate refuses it: no model call in the run
    r = runner.invoke(app, ["run", "demo_digits", "--input", blank])
    assert r.exit_code == 0, r.output
    assert seen[-1]["demo-digits"], "demo_digits' model node: its model must be loaded before the run"
    prompt = json.dumps({"prompt": "Send it to card 4539 1488 0343 6467.\nROMEO:"})  # blocked by the input rail
    r = runner.invoke(app, ["run", "demo_generate", "--input", prompt])
    assert r.exit_code == 0, r.output
    assert seen[-1]["demo-lm"], "demo_generate's generate node: its model must be loaded before the run"


def test_concurrency_below_one_is_refused(tmp_path):
    """`--concurrency 0` and `-3` were accepted silently."""
    f = tmp_path / "in.jsonl"
    f.write_text('{"images": [[0]]}\n')
    for bad in ("0", "-3"):
        r = CliRunner().invoke(app, ["run", "demo_digits", "--input-file", str(f), "--concurrency", bad])
        assert r.exit_code == 2, r.output
        assert "--concurrency" in r.output and "1" in r.output
