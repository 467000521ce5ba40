"""Regression (n16, a newcomer's finding): `workbench model add DIR` copied a Hugging Face folder the runtime
cannot load (pickled `pytorch_model.bin` weights, no `*.safetensors`; or a config.json alone) and said "added";
`workbench serve` then refused to start, since it loads every catalogue model. The folder is now loaded first,
as the catalogue will load it, and refused with the reason; nothing is written."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.app import app

DEMO_LM = Path(__file__).resolve().parents[2] / "models" / "demo-lm"


@pytest.mark.parametrize("kind", ["pickled-weights", "config-only"])
def test_a_folder_that_does_not_load_is_not_added(tmp_path: Path, kind: str):
    folder = tmp_path / "m"
    folder.mkdir()
    if kind == "pickled-weights":
        for f in ("config.json", "tokenizer.json", "tokenizer_config.json", "generation_config.json"):
            shutil.copy(DEMO_LM / f, folder / f)
        (folder / "pytorch_model.bin").write_bytes(b"\x80\x02pickled weights are not loaded\n")
        reason = "not a Hugging Face causal LM directory (needs config.json and *.safetensors)"
    else:
        (folder / "config.json").write_text('{"model_type": "bert"}')
        reason = "not a Hugging Face model directory: tokenizer.json is missing"
    repo = tmp_path / "models"
    r = CliRunner().invoke(app, ["model", "add", str(folder), "--name", "m", "--repository", str(repo)])
    assert r.exit_code == 1, r.output
    assert r.output.startswith(f"error: {folder}: not added: it does not load (format hf, task "), r.output
    assert reason in r.output
    assert not repo.exists()  # nothing written


def test_a_folder_that_loads_is_added_as_before(tmp_path: Path):
    repo = tmp_path / "models"
    r = CliRunner().invoke(app, ["model", "add", str(DEMO_LM), "--name", "lm", "--repository", str(repo)])
    assert r.exit_code == 0, r.output
    assert (repo / "lm" / "1" / "model.safetensors").is_file()
    assert "task: causal-lm" in (repo / "lm" / "config.yaml").read_text()
