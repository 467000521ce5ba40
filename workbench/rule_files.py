"""Files beside the `.clp` files of the knowledge-base folder: scenario files and decision tables.

One implementation for the TUI's in-process backend and the API's `/v1/scenarios` and
`/v1/decision-tables` routes, so both answer alike:

- scenario files (`*.yaml` / `*.yml`, e.g. `loan.scenarios.yaml`, the format of `workbench kb
  test`, `chaining.scenarios`): listed, read, and run into the document `workbench kb test
  --json` prints;
- decision tables (`*.csv` / `*.xlsx`, `rules.decision_table`): listed, their cells read, and the
  rules generated from their rows (what `workbench kb show` prints for the file) with the located
  errors of the knowledge base they belong to (`file.csv:ROW:COL: message`);
- console programs (`run_console_program`): a knowledge base run as `workbench kb run` runs it,
  with a console other than the process's standard input (the TUI's console pane; in-process
  only: servers keep refusing console input).

Paths are POSIX paths relative to the knowledge-base folder; anything that would reach outside
the folder (`..`, an absolute path, a scenario file naming rule files outside it) raises
`RuleFilePathError` (a ValueError). Messages and diagnostics name files relative to the folder.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from workbench.pipeline.errors import NotFoundError

SCENARIO_SUFFIXES = (".yaml", ".yml")


class RuleFilePathError(ValueError):
    """A path outside the knowledge-base folder, or of the wrong kind of file."""


def resolve(kb_dir: str | Path, path: str, suffixes: tuple[str, ...]) -> Path:
    """`kb_dir / path`, checked to lie inside `kb_dir`, to end with one of `suffixes` and to exist.

    Raises:
        RuleFilePathError: outside the folder or another kind of file.
        NotFoundError: no such file (kind "file").
    """
    root = Path(kb_dir).resolve()
    full = (root / path).resolve()
    if root not in full.parents:
        raise RuleFilePathError(f"{path}: outside the knowledge-base folder")
    if full.suffix.lower() not in suffixes:
        raise RuleFilePathError(f"{path}: expected a {' or '.join(suffixes)} file")
    if not full.is_file():
        raise NotFoundError("file", path, "not in the knowledge-base folder")
    return full


def _listed(kb_dir: str | Path, suffixes: tuple[str, ...]) -> list[str]:
    root = Path(kb_dir)
    if not root.is_dir():
        return []
    found = (p for p in root.rglob("*") if p.is_file() and p.suffix.lower() in suffixes)
    return sorted(p.relative_to(root).as_posix() for p in found if not p.name.startswith("."))


def _relative(kb_dir: str | Path, text: str) -> str:
    """`text` with the folder's absolute path taken out of file names (errors are shown to clients)."""
    root = str(Path(kb_dir).resolve())
    return text.replace(root + "/", "").replace(str(Path(kb_dir)) + "/", "")


def _diagnostic(kb_dir: str | Path, d: Any) -> dict[str, Any]:
    out = d.to_dict()
    out["file"] = _relative(kb_dir, str(out["file"]))
    out["text"] = _relative(kb_dir, str(d))  # `file:line:col: message`, as the CLI prints it
    return out


# ---- scenario files ---------------------------------------------------------------------------
def scenario_files(kb_dir: str | Path) -> list[str]:
    """Scenario files (`*.yaml`, `*.yml`) under the folder, relative POSIX paths, sorted."""
    return _listed(kb_dir, SCENARIO_SUFFIXES)


def read_scenario_file(kb_dir: str | Path, path: str) -> str:
    """The text of one scenario file. Raises as `resolve`."""
    return resolve(kb_dir, path, SCENARIO_SUFFIXES).read_text(encoding="utf-8")


def run_scenario_file(
    kb_dir: str | Path, path: str, *, allow_unsafe: bool = False, timeout: float = 60.0
) -> dict[str, Any]:
    """Run the scenarios of one file (`chaining.scenarios.run_scenarios`) into the document of
    `workbench kb test --json`:

    `{"file", "passed", "failed", "scenarios": [{"name", "passed", "seconds", "failures":
    [{"check", "expected", "actual"}]}], "error": str | None, "diagnostics": [...]}`. A malformed
    file has `error` (its located message) and no scenarios; a knowledge base that does not load
    has `error` and the located `diagnostics` (`{"file", "line", "column", "message", "text"}`).

    Raises RuleFilePathError / NotFoundError for the path, and RuleFilePathError when the file's
    `knowledge_base` names a file outside the folder.
    """
    import rules
    from chaining.scenarios import ScenarioFile, ScenarioFileError, run_scenarios

    full = resolve(kb_dir, path, SCENARIO_SUFFIXES)
    doc: dict[str, Any] = {"file": path, "passed": 0, "failed": 0, "scenarios": [], "error": None, "diagnostics": []}
    try:
        spec = ScenarioFile.read(full)
    except ScenarioFileError as exc:
        return {**doc, "error": _relative(kb_dir, str(exc))}
    root = Path(kb_dir).resolve()
    for f in spec.knowledge_base:
        if root not in f.resolve().parents:
            raise RuleFilePathError(f"{path}: knowledge_base: {f.name} is outside the knowledge-base folder")
    try:
        results = run_scenarios(spec, allow_unsafe=allow_unsafe, timeout=timeout)
    except ScenarioFileError as exc:  # an expected pattern or goal that does not fit the knowledge base
        return {**doc, "error": _relative(kb_dir, str(exc))}
    except rules.RuleError as exc:
        diagnostics = [_diagnostic(kb_dir, d) for d in exc.diagnostics]
        return {**doc, "error": "the knowledge base does not load", "diagnostics": diagnostics}
    failed = sum(not r.passed for r in results)
    scenarios = [r.to_dict() for r in results]
    for s in scenarios:
        for f in s["failures"]:
            f["actual"] = _relative(kb_dir, f["actual"])
    return {**doc, "passed": len(results) - failed, "failed": failed, "scenarios": scenarios}


# ---- decision tables --------------------------------------------------------------------------
def decision_tables(kb_dir: str | Path) -> list[str]:
    """Decision tables (`*.csv`, `*.xlsx`) under the folder, relative POSIX paths, sorted."""
    from rules.decision_table import TABLE_SUFFIXES

    return _listed(kb_dir, TABLE_SUFFIXES)


def decision_table(kb_dir: str | Path, path: str, *, allow_unsafe: bool = False) -> dict[str, Any]:
    """One decision table: its cells and the rules generated from its rows.

    The table is loaded with the knowledge base it belongs to (the `.clp` files of its folder,
    where its templates are defined, then the folder's tables, as `workbench kb check FOLDER`).
    Returns `{"file", "knowledge_base": [files], "rows": [[cell text]] (the header first),
    "rules": generated CLIPS text ("" when the knowledge base does not load), "diagnostics":
    [{"file", "line", "column", "message", "text"}]}`; `text` is `file.csv:ROW:COL: message`.
    Raises RuleFilePathError / NotFoundError for the path.
    """
    import rules
    from rules.decision_table import TABLE_SUFFIXES, TableCellError, read_rows
    from rules.knowledge_base import folder_files

    full = resolve(kb_dir, path, TABLE_SUFFIXES)
    root = Path(kb_dir).resolve()
    files = [full] if full.parent == root else (folder_files(full.parent) or [full])
    doc: dict[str, Any] = {
        "file": path,
        "knowledge_base": [f.resolve().relative_to(root).as_posix() for f in files],
        "rows": [],
        "rules": "",
        "diagnostics": [],
    }
    try:
        doc["rows"] = read_rows(full)
    except (TableCellError, OSError, UnicodeDecodeError, ValueError):
        pass  # the same failure comes back located from loading the knowledge base below
    try:
        kb = rules.load_knowledge_base(files, allow_unsafe=allow_unsafe)
    except rules.RuleError as exc:
        mine = [d for d in exc.diagnostics if Path(d.file).resolve() == full]
        others = [d for d in exc.diagnostics if Path(d.file).resolve() != full]
        doc["diagnostics"] = [_diagnostic(kb_dir, d) for d in mine + others]
        return doc
    doc["rules"] = next((text for f, text in kb.sources if Path(f).resolve() == full), "")
    return doc


# ---- console programs -------------------------------------------------------------------------
def run_console_program(library: Any, name: str, facts: list[Any], *, input: Any, output: Any) -> dict[str, Any]:
    """Run knowledge base `name` of a `KnowledgeBaseLibrary` forward with `input` as the program's
    terminal input and `output` receiving its text as printed (`chaining.forward.Console`: a binary
    stream with `read1`/`read`, whose b"" is CLIPS's EOF; a text stream with `write`/`flush`).

    The engine is `workbench kb run`'s: one worker, a fresh CLIPS environment closed afterwards,
    60 s of running (time spent waiting for input not counted), 512 MiB. Blocks until the program
    ends. Returns `ForwardResult.to_dict()`, plus `"error"` when a rule failed or a limit stopped the
    run (what ran until then is kept). Raises KnowledgeBaseNotFoundError / KnowledgeBaseError for
    the knowledge base, rules.FactError for bad facts, ForwardError when nothing ran.
    """
    from chaining.forward import Console, EngineConfig, ForwardEngine, ForwardError

    kb = library.load(name)
    config = EngineConfig(
        workers=1, max_firings=None, timeout=60.0, memory_limit=512 << 20, console=Console(input, output)
    )
    engine = ForwardEngine.from_knowledge_base(kb, config=config, functions=library.functions)
    try:
        return engine.evaluate(facts).to_dict()
    except ForwardError as exc:
        partial = getattr(exc, "partial", None)
        if partial is None:
            raise
        return {**partial.to_dict(), "error": str(exc)}
    finally:
        engine.close()
