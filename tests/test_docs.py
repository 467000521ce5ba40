"""The code blocks of README.md and docs/*.md run as tests (issue 20).

- `python` blocks run in file order, one namespace per file (as cells of a notebook), from the
  repository root with a temporary store. Blocks that talk to `127.0.0.1:8000` run against a real
  uvicorn server on a free port of 127.0.0.1 (the address in the text is rewritten to it).
- `bash` and `console` blocks run, per file in order, in a throw-away project folder, with a real
  `workbench serve` where a block talks to the server; exit statuses and shown output are checked
  (tests/docs_shell.py says how, and the markers a doc uses for blocks that cannot run here and for
  illustrative output). Blocks that are not run are listed in NOT_RUN below and reported as
  skipped with their reason. Every `workbench` command line of a shell block also names a command
  that exists and options it takes (its `--help`), including those of blocks not run.
- every fence names its language (```text for layouts and outputs that are not commands).
- `clips` blocks parse (rule text; fragments may use templates defined elsewhere).
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
import sys
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


@pytest.fixture()
def own_default_registry(monkeypatch):
    """A default model registry of the doc's own, closed after its blocks: a model a block registers
    there (docs/generation.md: `register_demo_lm()`) served every later test of the process that used
    the default registry, and its generation-engine thread ran on to the end of the run."""
    import neural.registry

    monkeypatch.setattr(neural.registry, "_default", None)
    yield
    if neural.registry._default is not None:
        neural.registry._default.close()


@pytest.mark.parametrize("doc", PY_FILES, ids=lambda d: str(d.relative_to(ROOT)))
def test_python_blocks_run(doc, docs_env, own_default_registry, request):
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


def _commands(code: str, lang: str = "bash") -> list[list[str]]:
    """`workbench ...` command lines of a shell block (continuations joined, comments and env dropped)."""
    out = []
    if lang == "console":
        code = "\n".join(line[2:] for line in code.splitlines() if line.startswith("$ "))
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


BASH = [b for lang in ("bash", "console") for b in blocks(lang) if _commands(b[2], lang)]


@pytest.mark.parametrize("block", BASH, ids=_id)
def test_documented_commands_exist(block, docs_env):
    from cli.app import app

    runner = CliRunner()
    lang = "console" if block[2].startswith("$ ") else "bash"
    for words in _commands(block[2], lang):
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


@pytest.mark.parametrize("block", blocks("clips"), ids=_id)
def test_clips_blocks_parse(block):
    """Rule text shown in the docs is valid CLIPS syntax for our parser (fragments may use
    templates defined elsewhere, so only the syntax is checked)."""
    from rules import parse

    parse(block[2], filename=_id(block))


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


# ---- shell blocks run ----------------------------------------------------------------------------
sys.path.insert(0, str(ROOT / "tests"))
from docs_shell import Project, check_console, console_script, needs_server, shell_blocks, starts_server  # noqa: E402

SHELL = shell_blocks(DOCS)
SHELL_FILES = sorted({b.doc for b in SHELL if b.not_run_reason is None})
# The blocks that cannot run here: (file, the reason the doc shows). Keep this list short.
NOT_RUN = [
    ("README.md", "runs scripts/bootstrap.sh (syncs .venv) and the whole test suite"),
    ("docs/demo.md", "retrains the shipped models (rewrites models/)"),
    ("docs/tui.md", "interactive full-screen terminal UI (tests/tui drives it with Pilot)"),
    ("docs/tui.md", "runs the TUI test suite and rewrites its snapshots"),
    ("docs/scaling.md", "needs the `ray` extra and a Ray cluster (tests/scale runs them)"),
    ("docs/scaling.md", "shows runs recorded by replicas of a Ray deployment"),
    ("docs/scaling.md", "needs the `ray` extra and a Ray cluster (tests/scale runs them)"),
]
LANGS = {"bash", "console", "python", "json", "yaml", "text", "clips"}


def test_not_run_blocks_are_the_listed_ones():
    marked = [(str(b.doc.relative_to(ROOT)), b.not_run_reason) for b in SHELL if b.not_run_reason is not None]
    assert sorted(marked) == sorted(NOT_RUN), "a block marked `# not run by the docs tests:` must be listed here"


@pytest.mark.parametrize("block", [b for b in SHELL if b.not_run_reason], ids=lambda b: b.where)
def test_not_run_block(block):
    pytest.skip(f"{block.where} is not run: {block.not_run_reason}")


def test_every_fence_names_its_language():
    fence = re.compile(r"^```(\w*)([^\n]*)\n(.*?)^```", re.S | re.M)
    for doc in DOCS:
        text = doc.read_text()
        for m in fence.finditer(text):
            where = f"{doc.relative_to(ROOT)}:{text[: m.start()].count(chr(10)) + 1}"
            assert m.group(1) in LANGS, f"{where}: fence language {m.group(1)!r}; use one of {sorted(LANGS)}"


@pytest.mark.parametrize("doc", SHELL_FILES, ids=lambda d: str(d.relative_to(ROOT)))
def test_shell_blocks_run(doc, tmp_path):
    project = Project.create(tmp_path)
    try:
        for block in [b for b in SHELL if b.doc == doc]:
            if block.not_run_reason:
                continue
            if needs_server(block.code) and not starts_server(block.code) and not project.server_up():
                project.start_server()
            if block.lang == "console":
                script, commands = console_script(block, project)
                result = project.run(script)
                problems = check_console(block, project, result.stdout, commands)
            else:
                result = project.run(project.localise(block.code))
                problems = [] if result.returncode == 0 else [f"exit {result.returncode}:\n{result.stdout[-4000:]}"]
            if problems:
                log = f"\n--- server log:\n{project.server_log()}" if needs_server(block.code) else ""
                raise AssertionError(f"{block.where}: " + "\n".join(problems) + log)
    finally:
        project.stop()


def test_the_runner_catches_wrong_output_status_and_http_errors(tmp_path):
    """The shell runner fails a doc whose shown output, exit status or HTTP status is wrong."""
    from docs_shell import ShellBlock, output_matches

    assert output_matches(["a ... c", "...", "z"], "a b c\nx\ny\nz\n")
    assert not output_matches(["a ... c", "z"], "a b c\nx\nz\n")
    assert not output_matches(["ok"], "")
    project = Project.create(tmp_path)
    doc = ROOT / "README.md"
    good = ShellBlock(doc, 1, "console", "$ echo 'a  b'\na  b\n$ false   # exit 1\n")
    script, commands = console_script(good, project)
    assert check_console(good, project, project.run(script).stdout, commands) == []
    bad = ShellBlock(doc, 1, "console", "$ echo one\ntwo\n$ false\n")
    script, commands = console_script(bad, project)
    problems = check_console(bad, project, project.run(script).stdout, commands)
    assert len(problems) == 2 and "output differs" in problems[0] and "exited with 1" in problems[1], problems
    illustrative = ShellBlock(doc, 1, "console", "$ echo one\ntwo\n", illustrative=True)
    script, commands = console_script(illustrative, project)
    assert check_console(illustrative, project, project.run(script).stdout, commands) == []
    # curl fails the block on an HTTP error status (nothing listens on a closed port either)
    assert project.run(project.localise("curl -s localhost:8000/healthz")).returncode != 0
    import http.server
    import threading

    server = http.server.HTTPServer(("127.0.0.1", project.port), http.server.SimpleHTTPRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        assert project.run(project.localise("curl -s localhost:8000/missing")).returncode == 22
        assert project.run(project.localise("curl -sf localhost:8000/missing || echo no")).returncode == 0
    finally:
        server.shutdown()
        server.server_close()
