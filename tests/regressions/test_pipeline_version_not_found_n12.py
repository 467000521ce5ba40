"""Promoting (or getting) a version a stored pipeline does not have said the pipeline itself was missing:
`PUT /v1/pipelines/triage/stages/production {"version": "zz"}` -> 404 "pipeline 'triage' not found:
pipeline triage has no version 'zz'". The message now says the version is missing and lists the stored
ones (still a `PipelineNotFoundError`, a 404)."""

from __future__ import annotations

import pytest

from workbench import Workbench
from workbench.pipeline.errors import PipelineNotFoundError

DOC = (
    "name: p\nnodes:\n  - {id: a, type: input}\n  - {id: o, type: output, fields: {x: 'input.q'}}\n"
    "edges: [{from: a, to: o}]\n"
)


def test_a_missing_version_is_named_with_the_stored_ones(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("WORKBENCH_DATABASE_URL", f"sqlite:///{tmp_path}/db.sqlite3")
    with Workbench(
        knowledge_base_dir=tmp_path, pipeline_dir=tmp_path / "none", model_catalog=tmp_path / "n.yaml"
    ) as wb:
        version = wb.save_pipeline(DOC)
        for call in (lambda: wb.promote("p", "zz", "production"), lambda: wb.get_pipeline("p", version="zz")):
            with pytest.raises(PipelineNotFoundError) as info:
                call()
            assert str(info.value) == f"pipeline 'p' has no stored version 'zz'; stored versions: {version[:12]}"
        with pytest.raises(PipelineNotFoundError, match="pipeline 'q' has no stored versions"):
            wb.promote("q", "zz", "production")
