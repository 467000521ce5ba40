"""Review findings 02 and 03: a `;@model` input fed with symbols is a located error (not numpy's
ValueError), and `kb check` refuses a `labels=` count that differs from the model's classes."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from chaining.backward import BackwardError
from cli.app import app
from workbench import Workbench

CASE = Path(__file__).resolve().parents[1] / "regressions" / "cases" / "backward_models" / "digits_model_backed.clp"
GOOD_LINE = ";@model demo-digits input.pixels=pixels labels=0,1,2,3,4,5,6,7,8,9 threshold=0.6"


def _variant(tmp_path: Path, first_line: str, name: str = "bad.clp") -> Path:
    lines = CASE.read_text().splitlines()
    assert lines[0] == GOOD_LINE
    path = tmp_path / name
    path.write_text("\n".join([first_line, *lines[1:]]) + "\n")
    return path


def test_the_case_works_as_given() -> None:
    r = CliRunner().invoke(app, ["kb", "ask", str(CASE), "(read ?i ?l)", "--all"])
    assert r.exit_code == 0, r.output
    assert "one call, batch 3" in r.stdout


def test_kb_ask_stops_the_batchers_of_the_models_it_loaded() -> None:
    # run in-process (tests, scripts), kb ask left its models' batcher threads running into later tests
    before = set(threading.enumerate())
    r = CliRunner().invoke(app, ["kb", "ask", str(CASE), "(read ?i ?l)", "--all"])
    assert r.exit_code == 0, r.output
    left = [t.name for t in threading.enumerate() if t not in before and t.is_alive()]
    assert left == []


@pytest.mark.parametrize(
    ("first_line", "slot", "value"),
    [
        (";@model demo-digits input.pixels=image", "image", "img0"),  # the single-field slot of symbols
        (GOOD_LINE, "pixels", "a"),  # the right slot, symbol values (see the deffacts below)
    ],
)
def test_symbols_in_a_model_input_are_a_located_error(tmp_path: Path, first_line: str, slot: str, value: str) -> None:
    kb = _variant(tmp_path, first_line)
    if slot == "pixels":
        kb.write_text(kb.read_text() + "(deffacts s (scan (image imgx) (pixels a b c)))\n")
    r = CliRunner().invoke(app, ["kb", "ask", str(kb), "(read ?i ?l)", "--all"])
    assert r.exit_code == 1, r.output
    assert "Traceback" not in r.output and "could not convert" not in r.output
    assert f"{kb}:1:1: (digit (image " in r.stderr
    assert f"slot {slot} value {value} is not a number; model 'demo-digits' input 'pixels' is float32" in r.stderr


def test_workbench_ask_raises_our_error_not_numpys(tmp_path: Path) -> None:
    kb_dir = tmp_path / "kb"
    kb_dir.mkdir()
    _variant(kb_dir, ";@model demo-digits input.pixels=image", "digits.clp")
    (tmp_path / "pipelines").mkdir()
    with Workbench(knowledge_base_dir=kb_dir, pipeline_dir=tmp_path / "pipelines") as wb:
        with pytest.raises(BackwardError, match=r"slot image value img0 is not a number") as err:
            wb.ask("digits", "(read ?i ?l)", all=True)
    assert not isinstance(err.value, ValueError)


def test_kb_check_refuses_a_labels_count_the_output_does_not_have(tmp_path: Path) -> None:
    kb = _variant(tmp_path, ";@model demo-digits input.pixels=pixels labels=a,b", "f.clp")
    message = f"{kb}:1:1: labels= names 2 classes; model 'demo-digits' output 'logits' has 10"
    check = CliRunner().invoke(app, ["kb", "check", str(kb)])
    assert check.exit_code == 1 and message in check.stdout
    ask = CliRunner().invoke(app, ["kb", "ask", str(kb), "(read ?i ?l)"])
    assert ask.exit_code == 1 and message in ask.stderr  # the same words kb ask uses
    assert CliRunner().invoke(app, ["kb", "check", str(CASE)]).exit_code == 0
