"""Regression (n11, newcomer walk-through): `workbench runs replay RUN --kb NAME=FILE` loaded the
pipeline's models inside the replayed run, so the recorded replay's timings carried the load
(`embed 7,151 ms` next to a 493 ms model call; 122 ms once loaded first), as n10 found for
`workbench run`; and `--no-record` printed "replayed RUN as None". The CLI now loads the models of
the recorded pipeline version's model and generate nodes first, and says "(not recorded)"."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from cli.app import app


def test_models_are_loaded_before_the_replay(monkeypatch):
    from workbench import Workbench

    runner = CliRunner()
    blank = json.dumps({"images": [[0] * 64, [0] * 64]})  # the gate refuses it: no model call in the run
    r = runner.invoke(app, ["run", "demo_digits", "--input", blank, "--json"])
    assert r.exit_code == 0, r.output
    run_id = json.loads(r.output.strip().splitlines()[-1])["run_id"]

    seen: list[bool] = []
    original = Workbench.replay

    async def spy(self, run, **kwargs):
        seen.append(self.catalog.is_loaded("demo-digits"))
        return await original(self, run, **kwargs)

    monkeypatch.setattr(Workbench, "replay", spy)
    r = runner.invoke(app, ["runs", "replay", run_id, "--no-record"])
    assert r.exit_code == 0, r.output
    assert seen == [True], "demo_digits' model node: its model must be loaded before the replayed run"
    assert f"replayed {run_id} (not recorded): succeeded" in " ".join(r.output.split())
    assert "as None" not in r.output
