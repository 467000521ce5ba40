"""Regression (n11, newcomer walk-through): `workbench runs list --help` showed `--pipeline` and `--json`
with no description, `runs replay --help` `--json` too, and `model --help` / `runs --help` broke
`model list`, `model add` and `runs show` in mid-sentence where their docstrings had line breaks
("...NAME/config.yaml and a new" / "numbered version ..."). Every option of these groups has a help
text now, and no command help holds a hard line break."""

from __future__ import annotations

import importlib

import pytest
import typer


@pytest.mark.parametrize("module", ["cli.runs", "cli.model", "cli.pipeline"])
def test_every_option_says_what_it_does_and_help_has_no_hard_breaks(module):
    group = typer.main.get_command(importlib.import_module(module).app)
    missing, broken = [], []
    for name, command in group.commands.items():
        if "\n" in (command.help or "").strip():
            broken.append(name)
        for param in command.params:
            if param.param_type_name == "option" and not (getattr(param, "help", None) or "").strip():
                if "--help" not in param.opts:
                    missing.append(f"{name} {'/'.join(param.opts)}")
    assert missing == [], f"options without help: {missing}"
    assert broken == [], f"command help with a line break (rich shows it mid-sentence): {broken}"
