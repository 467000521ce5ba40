"""Regression (q14): `workbench model export NAME --onnx /missing/dir/x.onnx` and `workbench bench NAME --out
/missing/dir/x.json` created the missing folders silently (bench only after its whole run), while
`demo --json` refused a missing folder. One rule now (cli/outputs.py): the CLI never creates missing
parent folders of an output; a file option needs its folder, a folder option (`demo --write-inputs DIR`,
`model add --repository DIR`) creates DIR but not its parent; each is checked before any work, exit 2 and
`error: --OPTION PATH: REASON`. Every path option of the CLI is either an input or says so in its help."""

from __future__ import annotations

import typing
from pathlib import Path

import click
import pytest
import typer
from typer.testing import CliRunner

from cli.app import app
from cli.outputs import FILE_HELP, FOLDER_HELP

# Path options and arguments that the CLI reads (never writes).
INPUTS = {
    ("kb", "ask", "facts"),
    ("kb", "ask", "answers"),
    ("kb", "ask", "models"),
    ("kb", "check", "files"),
    ("kb", "explain", "files"),
    ("kb", "explain", "facts"),
    ("kb", "explain", "answers"),
    ("kb", "run", "files"),
    ("kb", "run", "facts"),
    ("kb", "shell", "files"),
    ("kb", "show", "files"),
    ("kb", "test", "file"),
    ("model", "add", "folder"),
    ("pipeline", "save", "file"),
    ("run", "input_file"),
    ("serve", "model"),
}


def _path_params():
    """(command path, parameter) of every parameter of type Path in the whole CLI (lazy groups loaded)."""
    root = typer.main.get_command(app)

    def walk(cmd, path, ctx):
        if hasattr(cmd, "list_commands"):  # a group (`demo` is one with options of its own)
            for name in cmd.list_commands(ctx):
                sub = cmd.get_command(ctx, name)
                yield from walk(sub, (*path, name), click.Context(sub, parent=ctx))
        for p in cmd.params:
            ann = p.type_descriptor.annotation
            if Path in (ann, *typing.get_args(ann)):
                yield path, p

    yield from walk(root, (), click.Context(root))


def test_every_path_option_is_an_input_or_states_the_output_rule():
    outputs = []
    for path, p in _path_params():
        if (*path, p.name) in INPUTS:
            continue
        assert (p.help or "").endswith((FILE_HELP, FOLDER_HELP)), (
            f"`workbench {' '.join(path)} {p.opts[0]}` writes a file or folder: end its help with cli.outputs's "
            "FILE_HELP or FOLDER_HELP and check it with check_output_file/check_output_folder before any work "
            "(or list it in INPUTS if the command only reads it)"
        )
        outputs.append(f"{' '.join(path)} {p.opts[0]}")
    assert {"bench rules --out", "bench api_compare --out", "model export --onnx", "demo --json"} <= set(outputs)
    assert {"demo --write-inputs", "model add --repository"} <= set(outputs)


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["model", "export", "demo-digits", "--onnx", "{missing}/x.onnx"], "--onnx"),
        (["bench", "rules", "--quick", "--out", "{missing}/x.json"], "--out"),
        (["bench", "api_compare", "--quick", "--out", "{missing}/x.json"], "--out"),
        (["demo", "--quick", "--json", "{missing}/x.json"], "--json"),
    ],
    ids=["model-export", "bench", "bench-api-compare", "demo-json"],
)
def test_a_file_option_in_a_missing_folder_is_refused_before_any_work(tmp_path, args, option):
    missing = tmp_path / "missing" / "dir"
    r = CliRunner().invoke(app, [a.replace("{missing}", str(missing)) for a in args])
    assert r.exit_code == 2, r.output  # before the fix (export, bench): 0, and the folders were made
    target = missing / Path(args[-1]).name
    assert f"error: {option} {target}: the folder {missing} does not exist (missing folders are not created)" in (
        r.output
    )
    assert not (tmp_path / "missing").exists()


def test_a_folder_option_makes_its_folder_but_not_missing_parents(tmp_path):
    r = CliRunner().invoke(app, ["demo", "--write-inputs", str(tmp_path / "a" / "b")])
    assert r.exit_code == 2, r.output
    assert f"error: --write-inputs {tmp_path / 'a' / 'b'}: the folder {tmp_path / 'a'} does not exist" in r.output
    assert not (tmp_path / "a").exists()

    model = tmp_path / "tiny"
    model.mkdir()
    (model / "config.json").write_text('{"model_type": "bert"}')
    r = CliRunner().invoke(app, ["model", "add", str(model), "--repository", str(tmp_path / "r" / "s")])
    assert r.exit_code == 2, r.output
    assert f"error: --repository {tmp_path / 'r' / 's'}: the folder {tmp_path / 'r'} does not exist" in r.output
    assert not (tmp_path / "r").exists()

    r = CliRunner().invoke(app, ["demo", "--write-inputs", str(tmp_path / "inputs")])  # its parent exists
    assert r.exit_code == 0, r.output
    assert (tmp_path / "inputs" / "demo_digits.jsonl").is_file()


def test_the_rules_frontend_script_follows_the_rule(tmp_path):
    from cli.benchmarks._rules_frontend import main

    with pytest.raises(SystemExit) as info:
        main(["--quick", "--out", str(tmp_path / "missing" / "x.json")])
    assert info.value.code == 2
    assert not (tmp_path / "missing").exists()
