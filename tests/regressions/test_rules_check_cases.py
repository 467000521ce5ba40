"""Regressions from ../shared/cases (copied to tests/regressions/cases/rules/): `kb check`
gave false errors, accepted what CLIPS refuses, or crashed with a Python traceback.

Each case: the exit code CLIPS's verdict implies, located messages, never a traceback."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.app import app

CASES = Path(__file__).parent / "cases" / "rules"
runner = CliRunner()

# case -> (exit code, text in the output, line:col of the first diagnostic or None)
EXPECT = {
    "rhs_return_value_constraint": (0, "ok:", None),
    "field_multifield_slots": (0, "ok:", None),
    "logical_inside_or": (0, "ok:", None),
    "atan2_redefine": (0, "warning: [DFFNXPSR2]", "7:1"),
    "deep_plus_300": (0, "ok:", None),
    "deep_plus_500": (0, "ok:", None),
    "deep_fact_500": (1, "expected a function name", "1:16"),
    "bigint_4301": (0, "outside CLIPS's 64-bit range", "1:27"),
    "int_overflow": (0, "integer overflow", "1:27"),
    "nul_in_string": (1, "NUL character", "1:29"),
    "switch_dup_case": (1, "[PRCDRPSR3] duplicate case", "1:54"),
}


@pytest.mark.parametrize("name", sorted(EXPECT))
def test_check_case(name: str) -> None:
    path = CASES / f"{name}.clp"
    code, text, where = EXPECT[name]
    r = runner.invoke(app, ["kb", "check", str(path)])
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    assert "Traceback" not in r.output
    assert r.exit_code == code, r.output
    assert text in r.output, r.output
    if where is not None:
        located = [ln for ln in r.output.splitlines() if re.match(rf"{re.escape(str(path))}:\d+:\d+: ", ln)]
        assert located and located[0].startswith(f"{path}:{where}: "), r.output


def test_strict_refuses_warnings() -> None:
    for name in ("atan2_redefine", "bigint_4301", "int_overflow"):
        r = runner.invoke(app, ["kb", "check", "--strict", str(CASES / f"{name}.clp")])
        assert r.exit_code == 1 and "warning:" not in r.output, r.output


def test_redefined_builtin_is_skipped() -> None:
    """As CLIPS: the deffunction is reported (located) and left out; the rest loads. (The engine
    skips it as CLIPS does and runs the rule with the built-in: tests/regressions/
    test_forward_builtin_redefinition.py.)"""
    import rules

    kb = rules.load_knowledge_base(CASES / "atan2_redefine.clp")
    assert "atan2" not in kb.functions and [type(c).__name__ for c in kb.skipped] == ["FunctionDef"]
    assert list(kb.rules) == ["angle"]
    assert (kb.warnings[0].line, kb.warnings[0].column) == (7, 1) and "DFFNXPSR2" in kb.warnings[0].message
    with pytest.raises(rules.RuleValidationError, match="DFFNXPSR2"):
        rules.load_knowledge_base(CASES / "atan2_redefine.clp", strict=True)
