"""The code blocks of README.md and docs/*.md run as tests (issue 20).

- `python` blocks run in file order, one namespace per file (as cells of a notebook), from the
  repository root with a temporary store. Blocks that talk to `127.0.0.1:8000` run against a real
  uvicorn server on a free port of 127.0.0.1 (the address in the text is rewritten to it).
- `bash` blocks: every `workbench` command line names a command that exists and options it takes
  (checked with the command's `--help`; long-running commands such as `serve`, `demo`, `tui` and
  `bench` are not started here: their own tests run them).
- `json` blocks parse; `yaml` blocks parse, pipeline documents load as pipelines and scenario
  files run with `kb test` against the shipped knowledge bases.
- `text` blocks (screen captures, layouts) are not code; a block fenced as ```yaml sketch
  outlines a format with placeholders and is only read by people.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import shlex
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w*)([^\n]*)\n(.*?)^```", re.S | re.M)
SERVER_ADDRESSES = ("127.0.0.1:8000", "localhost:8000")
NOT_STARTED = {"serve", "demo", "tui", "bench"}  # long-running or interactive: checked with --help only


def blocks(lang: str) -> list[tuple[Path, int, str]]:
    out = []
    for doc in DOCS:
        text = doc.read_text()
        for m in FENCE.finditer(text):
            if m.group(1) == lang and "sketch" not in m.group(2).split():  # ```yaml sketch: a format outline
                out.append((doc, text[: m.start()].count("\n") + 2, m.group(3)))
    return out


def _id(item: tuple[Path, int, str]) -> str:
    return f"{item[0].relative_to(ROOT)}:{item[1]}"


@pytest.fixture()
def docs_env(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("WORKBENCH_DATABASE_URL", f"sqlite:///{tmp_path / 'docs.sqlite3'}")
    from workbench.config import get_settings

    get_settings.cache_clear()
    yield tmp_path
    get_settings.cache_clear()


@pytest.fixture(scope="module")
def docs_server(tmp_path_factory):
    """`workbench serve` as the docs assume it: the shipped pipelines, demo-digits and the demo LM."""
    import sys

    import torch

    sys.path.insert(0, str(ROOT / "tests" / "api"))  # the API tests' live-server helper
    from api_live import make_settings, serve

    from workbench import Workbench
    from workbench.serving import Serving

    torch.set_num_threads(1)
    settings = make_settings(tmp_path_factory.mktemp("docs-server"))
    wb = Workbench(settings)
    server = serve(Serving(wb, settings=settings, load_models=["demo-digits"], serve_demo_lm=True), settings)
    yield server
    server.stop()
    wb.close()


PY_FILES = sorted({doc for doc, _, _ in blocks("python")})


@pytest.mark.parametrize("doc", PY_FILES, ids=lambda d: str(d.relative_to(ROOT)))
def test_python_blocks_run(doc, docs_env, request):
    import torch

    torch.set_num_threads(1)
    ns: dict = {"__name__": "__docs__"}
    for path, line, code in blocks("python"):
        if path != doc:
            continue
        if any(a in code for a in SERVER_ADDRESSES):
            server = request.getfixturevalue("docs_server")
            for a in SERVER_ADDRESSES:
                code = code.replace(a, server.host_port)
        out = io.StringIO()
        try:
            with contextlib.redirect_stdout(out):
                exec(compile("\n" * (line - 1) + code, str(path), "exec"), ns)
        except Exception as exc:
            raise AssertionError(
                f"{path.relative_to(ROOT)}:{line}: the block fails: {type(exc).__name__}: {exc}"
            ) from exc


def _commands(code: str) -> list[list[str]]:
    """`workbench ...` command lines of a bash block (continuations joined, comments and env dropped)."""
    out = []
    for raw in code.replace("\\\n", " ").splitlines():
        line = raw.split(" #")[0].strip().rstrip("&").strip()
        if not line or line.startswith("#"):
            continue
        try:
            words = shlex.split(line)
        except ValueError:
            continue
        while words and re.match(r"^[A-Z_]+=", words[0]):
            words = words[1:]
        if words[:2] == ["uv", "run"]:
            words = words[2:]
        if words and words[0] in ("workbench", ".venv/bin/workbench"):
            out.append(words[1:])
    return out


BASH = [b for b in blocks("bash") if _commands(b[2])]


@pytest.mark.parametrize("block", BASH, ids=_id)
def test_documented_commands_exist(block, docs_env):
    from cli.app import app

    runner = CliRunner()
    for words in _commands(block[2]):
        path = []
        for w in words:
            if w.startswith("-") or "/" in w or "." in w or "(" in w or "{" in w or w.isdigit():
                break
            path.append(w)
            probe = runner.invoke(app, [*path, "--help"])
            if probe.exit_code != 0:
                path.pop()
                break
        assert path, f"{_id(block)}: `workbench {' '.join(words)}` names no command"
        help_text = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "300"}).output
        for w in words:
            option = w.split("=")[0]
            if option.startswith("--") and option not in ("--help",):
                assert option in help_text, f"{_id(block)}: `workbench {' '.join(path)}` has no option {option}"


@pytest.mark.parametrize("block", blocks("json"), ids=_id)
def test_json_blocks_parse(block):
    json.loads(block[2])


@pytest.mark.parametrize("block", blocks("yaml"), ids=_id)
def test_yaml_blocks_load(block, docs_env, tmp_path):
    doc = yaml.safe_load(block[2])
    if isinstance(doc, dict) and "nodes" in doc:
        from workbench import Pipeline

        pipeline = Pipeline.from_yaml(block[2])
        assert pipeline.name == doc["name"]
    elif isinstance(doc, dict) and "scenarios" in doc:
        import shutil

        from chaining.scenarios import ScenarioFile, run_scenarios

        for kb in (ROOT / "knowledge_bases").glob("*.clp"):  # the files a documented scenario names
            shutil.copy(kb, tmp_path / kb.name)
        path = tmp_path / "docs.test.yaml"
        path.write_text(block[2])
        results = run_scenarios(ScenarioFile.read(path))
        assert all(r.passed for r in results), [r.to_dict() for r in results if not r.passed]
