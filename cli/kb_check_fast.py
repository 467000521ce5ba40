"""The body of `workbench kb check`, importable without typer.

`fast_main` runs the plain command line `FILE... [--allow-unsafe] [--json] [--strict]` without
typer, whose parameter handling imports pydantic (~0.2 s): `cli.main` sends it here, and it
imports the rule language, and CLIPS once the files validate (`chaining.forward.load_check`: the
files are loaded into a throw-away CLIPS environment, as `kb run` loads them). The typer command (`cli.kb_check`) prints
through the same `run_check`.
"""

from __future__ import annotations

import json as jsonlib
import os
import sys
from pathlib import Path

_FLAGS = ("--allow-unsafe", "--json", "--strict")
SHOWN_NAMES = 200  # names listed per line before '... N more' (--json lists all)
SHOWN_RULES = 100  # rules described one per line


def unsafe_setting(flag: bool) -> bool:
    """`--allow-unsafe`, else the setting `allow_unsafe_rules` (WORKBENCH_ALLOW_UNSAFE_RULES).

    Raises:
        workbench.config.ConfigError: the settings are invalid.
    """
    if flag:
        return True
    if "WORKBENCH_ALLOW_UNSAFE_RULES" not in os.environ and "WORKBENCH_SETTINGS_FILE" not in os.environ:
        return False  # the setting's default: no source could change it, so skip loading the settings
    from workbench.config import get_settings

    return bool(get_settings().allow_unsafe_rules)


def run_check(files: list[Path], allow_unsafe: bool, as_json: bool, strict: bool) -> int:
    """Check the files as one knowledge base, print the report; the exit code (0 ok, 1 refused, 2 settings)."""
    from rules import RuleError, load_knowledge_base

    try:
        allow_unsafe = unsafe_setting(allow_unsafe)
    except Exception as exc:
        from workbench.config import ConfigError  # only now: most runs never load the settings

        if not isinstance(exc, ConfigError):
            raise
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        kb = load_knowledge_base(files, allow_unsafe=allow_unsafe, strict=strict)
    except RuleError as exc:  # every file's errors: a file that cannot be read or parsed stops none of the others
        checked_without = exc.unchecked if any(d.file not in exc.unchecked for d in exc.diagnostics) else []
        if as_json:
            doc = {"ok": False, "diagnostics": [d.to_dict() for d in exc.diagnostics]}
            if checked_without:
                doc["checked_without"] = checked_without
            print(jsonlib.dumps(doc))
        else:
            for d in exc.diagnostics:
                print(str(d))
            files_with = len({d.file for d in exc.diagnostics})
            where = f" in {files_with} files" if files_with > 1 else ""
            print(f"{len(exc.diagnostics)} error(s){where}", file=sys.stderr)
            if checked_without:
                print(
                    f"note: the other files were checked without {', '.join(checked_without)} (not read or not "
                    "parsed): a name defined only there reads as undefined",
                    file=sys.stderr,
                )
        return 1
    from chaining.forward.load_check import clips_refusals  # only now: loads CLIPS (cffi), ~0.1 s

    refused = clips_refusals(kb.sources, allow_unsafe=allow_unsafe) or _model_bindings(kb)
    if refused:
        if as_json:
            print(jsonlib.dumps({"ok": False, "diagnostics": [d.to_dict() for d in refused]}))
        else:
            for d in refused:
                print(str(d))
            print(f"{len(refused)} error(s)", file=sys.stderr)
        return 1
    summary = kb.summary()
    unknown = _unknown_premises()(kb)  # premises over relations nothing defines (warnings; facts may come at run time)
    if as_json:
        warnings = [d.to_dict() for d in kb.warnings] + [u.to_dict() for u in unknown]
        print(jsonlib.dumps({"ok": True, **summary, "warnings": warnings}))
        return 0
    for u in unknown:
        print(f"{u.file}:{u.line}:{u.column}: warning: {u.message}", file=sys.stderr)
    import shutil
    import textwrap

    width = max(40, min(shutil.get_terminal_size((100, 24)).columns, 200))
    lines = [str(d) for d in kb.warnings]
    lines.append(
        f"ok: {len(files)} file(s), knowledge base {kb.name} version {kb.version[:12]}"
        + (f", {len(kb.warnings)} warning(s)" if kb.warnings else "")
    )
    for key in ("templates", "rules", "functions", "deffacts", "askable"):
        names = summary[key]
        if names or key in ("templates", "rules"):
            shown = (
                names if len(names) <= SHOWN_NAMES else [*names[:SHOWN_NAMES], f"... {len(names) - SHOWN_NAMES} more"]
            )
            text = f"{key} ({len(names)}): {', '.join(shown)}"
            lines.append(textwrap.fill(text, width=width, subsequent_indent="  ", break_on_hyphens=False))
    for name, rule in list(kb.rules.items())[:SHOWN_RULES]:
        lines.append(
            f"  rule {name}: salience {rule.salience if isinstance(rule.salience, int) else 'dynamic'}, "
            f"reads {sorted(rule.reads)}, writes {sorted(rule.writes)}"
        )
    if len(kb.rules) > SHOWN_RULES:
        lines.append(f"  ... {len(kb.rules) - SHOWN_RULES} more rules (--json lists every one)")
    print("\n".join(lines))
    return 0


def _model_bindings(kb) -> list:
    """Located errors of the `;@model` annotations against the model catalogue (an unknown model, an
    input or output the model lacks); the catalogue is read only for files that have such annotations."""
    if not any(spec.model is not None for spec in kb.askable_specs.values()):
        return []
    from workbench.backward_models import check_bindings
    from workbench.pipeline.catalog import ModelCatalog
    from workbench.workbench import default_model_catalog

    catalog = ModelCatalog(default_model_catalog())
    try:
        return check_bindings(kb, catalog)
    finally:
        catalog.close()


def _unknown_premises():
    """`chaining.backward.check.unknown_premises`, loaded from its file alone when the package is
    not imported yet: importing `chaining.backward` loads both engines (CLIPS through cffi),
    which `kb check` never runs, and doubles its start-up time. The module needs `rules` only."""
    import importlib
    import importlib.util

    name = "chaining.backward.check"
    if name not in sys.modules:
        spec = importlib.util.find_spec("chaining")
        origin = Path(spec.origin).parent / "backward" / "check.py" if spec and spec.origin else None
        if origin is not None and origin.is_file():
            alone = importlib.util.spec_from_file_location("_kb_check_unknown_premises", origin)
            if alone is not None and alone.loader is not None:
                module = importlib.util.module_from_spec(alone)
                sys.modules[alone.name] = module  # dataclasses look their module up there
                try:
                    alone.loader.exec_module(module)
                    return module.unknown_premises
                except ImportError:  # it grew imports of its own package: take the usual way
                    del sys.modules[alone.name]
    return importlib.import_module(name).unknown_premises


def fast_main(args: list[str]) -> int | None:
    """`kb check` without typer for the plain command line `FILE... [--allow-unsafe] [--json] [--strict]`.

    Returns the exit code, or None when `args` hold anything else (help, another option,
    no file): typer then handles the command line.
    """
    files = [a for a in args if a not in _FLAGS]
    if not files or any(a.startswith("-") for a in files):
        return None
    return run_check([Path(f) for f in files], "--allow-unsafe" in args, "--json" in args, "--strict" in args)
