"""Regression: `workbench kb check` took 0.9-1.2 s to start, 7x `import clips, lark`: the CLI
imported every command module, SQLAlchemy (to validate a database URL kb never uses) and, through
typer's parameter handling, pydantic. Now the plain command line imports none of them and prints
exactly what the typer command prints. CLIPS is imported only once the files validate: they are
then loaded into a throw-away CLIPS environment (`chaining.forward.load_check`, docs/rules.md)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.app import app
from cli.kb_check_fast import fast_main

ROOT = Path(__file__).resolve().parents[2]
CASES = Path(__file__).parent / "cases" / "rules"
runner = CliRunner()


@pytest.mark.parametrize(
    ("path", "engines"),
    [
        ("knowledge_bases/animals.clp", "['chaining.forward.load_check', 'clips']"),  # valid: loaded into CLIPS
        (str(CASES / "switch_dup_case.clp"), "[]"),  # refused by the checker: CLIPS is never loaded
    ],
)
def test_plain_kb_check_imports_no_typer_pydantic_sqlalchemy_or_experta(path: str, engines: str) -> None:
    code = (
        f"import sys; sys.argv = ['workbench', 'kb', 'check', {path!r}]\n"
        "from cli import main\n"
        "try:\n    main()\nexcept SystemExit as e:\n    assert e.code in (0, 1), e.code\n"
        "heavy = sorted({m.split('.')[0] for m in sys.modules} & "
        "{'typer', 'click', 'pydantic', 'sqlalchemy', 'experta', 'workbench', 'torch', 'api'})\n"
        "print('HEAVY', heavy)\n"
        "print('ENGINES', sorted({m for m in sys.modules} & {'clips', 'chaining.forward.load_check'}))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "HEAVY []" in r.stdout, r.stdout
    assert f"ENGINES {engines}" in r.stdout, r.stdout


@pytest.mark.parametrize(
    "args",
    [
        ["knowledge_bases/animals.clp"],
        ["--json", "knowledge_bases/family.clp"],
        [str(CASES / "atan2_redefine.clp")],
        [str(CASES / "atan2_redefine.clp"), "--strict"],
        [str(CASES / "switch_dup_case.clp"), "--json"],
        ["no-such-file.clp"],
    ],
)
def test_fast_path_prints_what_the_typer_command_prints(args: list[str], capsys, monkeypatch) -> None:
    monkeypatch.chdir(ROOT)
    code = fast_main(args)
    fast = capsys.readouterr()
    r = runner.invoke(app, ["kb", "check", *args])
    assert code == r.exit_code
    assert fast.out == r.stdout


def test_other_command_lines_go_to_typer() -> None:
    assert fast_main(["--help"]) is None and fast_main([]) is None and fast_main(["-x", "f.clp"]) is None
