"""Regression (n12 F16): `Pipeline("a.b").save(path)` wrote a YAML file that loading refuses (the name rule
of `workbench.names` was applied only when YAML was parsed). `save` now refuses the name first and writes
nothing; a valid name still round-trips."""

from __future__ import annotations

import pytest

from workbench.pipeline.errors import PipelineValidationError
from workbench.pipeline.spec import Pipeline


def _echo(name: str) -> Pipeline:
    p = Pipeline(name)
    p.add_node("req", "input", schema={"type": "object"})
    p.add_node("out", "output", fields={"echo": "input.x"})
    p.chain("req", "out")
    return p


def test_save_refuses_an_invalid_name_and_writes_nothing(tmp_path):
    target = tmp_path / "a.yaml"
    with pytest.raises(PipelineValidationError) as info:
        _echo("a.b").save(target)
    assert "pipeline name 'a.b'" in str(info.value)
    assert not target.exists()


def test_a_valid_name_round_trips(tmp_path):
    p = _echo("a-b")
    saved = p.save(tmp_path / "a-b.yaml")
    assert Pipeline.from_file(saved).to_data() == p.to_data()
