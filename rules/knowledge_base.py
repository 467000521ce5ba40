"""Loading rule files into a validated `KnowledgeBase` (never executes anything)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from . import ast
from .annotations import Annotations, AskableSpec, read_annotations
from .decision_table import TableCellError, is_table, read_rows, rows_of_csv, table_to_clips
from .errors import Diagnostic, RuleError, RuleSyntaxError, RuleValidationError, UnsafeConstructError
from .parser import parse
from .validate import Validator, bare


@dataclass(slots=True)
class KnowledgeBase:
    """Parsed and validated rule files.

    Attributes:
        name: the knowledge base's name.
        version: sha256 hex over the ordered sources: for each, the file's base name, NUL, its
            text, NUL (base names, so the version does not depend on where the files lie).
        sources: (filename as given, text) in load order.
        modules: one `ast.Module` per source.
        constructs: all constructs in load order.
        templates / functions / facts: by (module-less) name.
        rules: by name; a name that rules of several modules share is keyed `MODULE::name` for each
            (CLIPS's name for them: two rules, not a redefinition), see `rule_keys`.
        globals: global variable names defined.
        askable: relations (templates or ordered) declared askable with `;@askable`.
        askable_specs: how each askable relation is asked (`rules.annotations.AskableSpec`).
        rule_certainty / facts_certainty: `;@cf` certainty factors by rule / deffacts name.
        certainty_factors: whether certainty factors are on for this knowledge base.
        python_functions: Python function names the caller registered (allowed in calls).
        warnings: what CLIPS reports while still loading the file (a redefined construct, an
            integer literal out of range, a deffunction that would replace a built-in), located.
        skipped: constructs CLIPS refuses while loading the rest (a deffunction that would
            replace a built-in); they are left out of `functions` and `constructs` (the forward
            engine skips them as CLIPS does: `ForwardEngine.load_messages`).
    """

    name: str
    version: str
    sources: list[tuple[str, str]]
    modules: list[ast.Module]
    constructs: list[ast.Construct]
    templates: dict[str, ast.TemplateDef]
    rules: dict[str, ast.RuleDef]
    functions: dict[str, ast.FunctionDef]
    facts: dict[str, ast.FactsDef]
    globals: set[str] = field(default_factory=set)
    askable: set[str] = field(default_factory=set)
    askable_specs: dict[str, AskableSpec] = field(default_factory=dict)
    rule_certainty: dict[str, float] = field(default_factory=dict)
    facts_certainty: dict[str, float] = field(default_factory=dict)
    certainty_factors: bool = False
    python_functions: frozenset[str] = frozenset()
    allow_unsafe: bool = False
    warnings: list[Diagnostic] = field(default_factory=list)
    skipped: list[ast.Construct] = field(default_factory=list)
    _string_slots: dict[str, frozenset[str]] | None = field(default=None, repr=False, compare=False)

    def string_slots(self) -> dict[str, frozenset[str]]:
        """Template -> its slots that accept STRING but not SYMBOL (e.g. `(slot title (type STRING))`):
        a plain `str` asserted there is a string, as `rules.facts.typed_fact(f, string_slots[t])`
        types it. Templates without such slots are left out. Computed once."""
        if self._string_slots is None:
            out: dict[str, frozenset[str]] = {}
            for name, t in self.templates.items():
                only = frozenset(n for n, s in t.slots.items() if "STRING" in s.types and "SYMBOL" not in s.types)
                if only:
                    out[name] = only
            self._string_slots = out
        return self._string_slots

    @property
    def text(self) -> str:
        """All sources joined in load order (what CLIPS is given)."""
        return "\n".join(t for _, t in self.sources)

    def summary(self) -> dict:
        """Counts and names, for CLIs and the API."""
        return {
            "name": self.name,
            "version": self.version,
            "templates": sorted(self.templates),
            "rules": sorted(self.rules),
            "functions": sorted(self.functions),
            "deffacts": sorted(self.facts),
            "askable": sorted(self.askable),
        }


def rule_keys(rule_defs: Sequence[ast.RuleDef]) -> dict[str, ast.RuleDef]:
    """Validated rules by name, in load order: the bare name when one module defines it, `MODULE::name`
    (CLIPS's own naming, as `(get-defrule-list *)` gives it) for each of the modules sharing a name. A rule
    redefined in its own module is its last definition (as in CLIPS) in the first one's place."""
    by_module: dict[tuple[str, str], ast.RuleDef] = {}
    for r in rule_defs:
        by_module[(r.module, bare(r.name))] = r
    modules_of: dict[str, int] = {}
    for _, name in by_module:
        modules_of[name] = modules_of.get(name, 0) + 1
    return {(f"{m}::{n}" if modules_of[n] > 1 else n): r for (m, n), r in by_module.items()}


def content_version(sources: Sequence[tuple[str, str]]) -> str:
    """sha256 hex of the ordered sources (base name, NUL, text, NUL for each)."""
    h = hashlib.sha256()
    for filename, text in sources:
        h.update(Path(filename).name.encode() + b"\0" + text.encode() + b"\0")
    return h.hexdigest()


def _analyse(sources: list[tuple[str, str]], allow_unsafe: bool, functions: Iterable[str]):
    modules: list[ast.Module] = []
    syntax: list[Diagnostic] = []
    for filename, text in sources:
        try:
            modules.append(parse(text, filename))
        except RuleSyntaxError as exc:
            syntax.extend(exc.diagnostics)
    if syntax:
        if modules:  # the files that parsed are checked too: every file's errors in one report
            v = Validator(allow_unsafe=allow_unsafe, functions=functions)
            v.run(modules)
            order = {filename: i for i, (filename, _) in enumerate(sources)}
            syntax = sorted(
                syntax + [d for m in modules for d in m.diagnostics] + v.diagnostics,
                key=lambda d: (order.get(d.file, len(order)), d.line, d.column),
            )
        return modules, syntax, None, None
    v = Validator(allow_unsafe=allow_unsafe, functions=functions)
    v.run(modules)
    order = {filename: i for i, (filename, _) in enumerate(sources)}
    diags = sorted(
        [d for m in modules for d in m.diagnostics] + v.diagnostics,
        key=lambda d: (order.get(d.file, len(order)), d.line, d.column),
    )
    templates = {bare(c.name): c for m in modules for c in m.constructs if isinstance(c, ast.TemplateDef)}
    notes, note_diags = read_annotations(modules, templates)
    return modules, diags + note_diags, v, notes


def _read(paths: Iterable[str | Path]) -> tuple[list[tuple[str, str]], list[Diagnostic], dict[str, list[int]]]:
    """Read rule files; decision tables (.csv/.xlsx) become CLIPS text placed after every .clp file.

    Returns (sources, diagnostics, line_rows): `line_rows[filename]` maps a table's generated
    lines (0-based) to its rows, so diagnostics in that text can name the table's row.
    """
    sources, diags = [], []
    tables: list[str] = []
    expanded: list[str | Path] = []
    for p in paths:  # a folder knowledge base: its .clp files, then its decision tables
        if not Path(p).is_dir():
            expanded.append(p)
        elif files := folder_files(Path(p)):
            expanded.extend(files)
        else:
            diags.append(
                Diagnostic(str(p), 1, 1, "no .clp files in this folder (a folder knowledge base is its .clp files)")
            )
    for p in expanded:
        if is_table(p):
            tables.append(str(p))
            continue
        try:
            sources.append((str(p), Path(p).read_text(encoding="utf-8")))
        except OSError as exc:
            diags.append(Diagnostic(str(p), 1, 1, f"cannot read rule file: {exc.strerror}"))
        except UnicodeDecodeError as exc:
            diags.append(_not_utf8(str(p), exc))
    line_rows = _add_tables(sources, diags, [(t, lambda t=t: read_rows(t)) for t in tables])
    return sources, diags, line_rows


def _not_utf8(filename: str, exc: UnicodeDecodeError) -> Diagnostic:
    """A rule file that is not UTF-8, located at its first bad byte (line, and column in characters)."""
    data: bytes = exc.object if isinstance(exc.object, bytes) else bytes(exc.object)
    start = exc.start
    line_start = data.rfind(b"\n", 0, start) + 1
    column = len(data[line_start:start].decode("utf-8", errors="replace")) + 1
    return Diagnostic(
        filename,
        data.count(b"\n", 0, start) + 1,
        column,
        f"not UTF-8: byte 0x{data[start]:02x} is not valid UTF-8 here ({exc.reason}); rule "
        "files are read as UTF-8: save it as UTF-8 (a file written as Latin-1 or Windows-1252 gives this)",
    )


def table_sources(
    sources: list[tuple[str, str]], tables: Iterable[str]
) -> tuple[list[tuple[str, str]], list[Diagnostic], dict[str, list[int]]]:
    """(filename, text) sources where the files named in `tables` hold a decision table's CSV text ->
    (the sources with each table's generated CLIPS text after the others, the tables' problems as
    located diagnostics, line_rows: a table's generated lines -> its rows). Never raises on bad cells."""
    csv_files = set(tables)
    clips = [(f, t) for f, t in sources if f not in csv_files]
    diags: list[Diagnostic] = []
    line_rows = _add_tables(clips, diags, [(f, lambda t=t: rows_of_csv(t)) for f, t in sources if f in csv_files])
    return clips, diags, line_rows


def _add_tables(
    sources: list[tuple[str, str]], diags: list[Diagnostic], tables: list[tuple[str, Callable[[], list[list[str]]]]]
) -> dict[str, list[int]]:
    """Append each decision table's generated CLIPS text to `sources` (its problems to `diags`), after
    the .clp sources whose templates it reads. `tables`: (file name, a reader of its rows). Returns line_rows."""
    line_rows: dict[str, list[int]] = {}
    if not tables:
        return line_rows
    templates, rule_names = _templates_of(sources)
    for t, rows_of in tables:
        try:
            rows = rows_of()
        except TableCellError as exc:
            diags.append(Diagnostic(t, exc.row, exc.column, str(exc)))
            continue
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            why = exc.strerror if isinstance(exc, OSError) else str(exc)
            diags.append(Diagnostic(t, 1, 1, f"cannot read decision table: {why}"))
            continue
        generated = table_to_clips(t, rows, templates, rule_names)
        diags.extend(generated.diagnostics)
        if not generated.diagnostics:
            sources.append((t, generated.text))
            line_rows[t] = generated.line_rows
            rule_names |= {line.split()[1] for line in generated.text.splitlines() if line.startswith("(defrule ")}
    return line_rows


def folder_files(folder: Path) -> list[Path]:
    """A folder knowledge base's files: its `.clp` files sorted, then its decision tables (.csv,
    .xlsx) sorted; empty when it has no `.clp` file."""
    clp = sorted(folder.glob("*.clp"))
    if not clp:
        return []
    return clp + sorted(p for p in folder.iterdir() if p.is_file() and is_table(p))


def _templates_of(sources: list[tuple[str, str]]) -> tuple[dict[str, ast.TemplateDef], set[str]]:
    """Templates and rule names the .clp sources define (sources that do not parse are skipped here)."""
    templates: dict[str, ast.TemplateDef] = {}
    rule_names: set[str] = set()
    for filename, text in sources:
        try:
            module = parse(text, filename)
        except RuleSyntaxError:
            continue
        for c in module.constructs:
            if isinstance(c, ast.TemplateDef):
                templates[bare(c.name)] = c
            elif isinstance(c, ast.RuleDef):
                rule_names.add(bare(c.name))
    return templates, rule_names


def _locate_in_tables(diags: list[Diagnostic], line_rows: dict[str, list[int]]) -> list[Diagnostic]:
    """Diagnostics inside a table's generated text point at the table's row instead."""
    if not line_rows:
        return diags
    out = []
    for d in diags:
        rows = line_rows.get(d.file)
        if rows and 1 <= d.line <= len(rows):
            d = Diagnostic(d.file, rows[d.line - 1], 1, d.message, d.severity)
        out.append(d)
    return out


def check_sources(
    sources: list[tuple[str, str]],
    *,
    allow_unsafe: bool = False,
    functions: Iterable[str] = (),
    warnings: bool = False,
    strict: bool = False,
    tables: Iterable[str] = (),
) -> list[Diagnostic]:
    """Located diagnostics for (filename, text) sources; never raises on bad rule text.

    Errors only (empty when the sources load), unless `warnings` (also what CLIPS reports but
    loads past, `severity` "warning") or `strict` (warnings count as errors: returned with
    severity "error"). `tables`: the file names whose text is a decision table's CSV (checked as
    the rules generated from its rows, after the other sources; located as `file.csv:ROW:COL`);
    every other text is CLIPS text.
    """
    if set(tables) & {f for f, _ in sources}:
        clips, read_diags, line_rows = table_sources(sources, tables)
        found = check_sources(clips, allow_unsafe=allow_unsafe, functions=functions, warnings=warnings, strict=strict)
        return read_diags + _locate_in_tables(found, line_rows)
    _, diags, _, _ = _analyse(sources, allow_unsafe, functions)
    if strict:
        return [_as_error(d) for d in diags]
    return diags if warnings else [d for d in diags if d.severity != "warning"]


def _as_error(d: Diagnostic) -> Diagnostic:
    return d if d.severity == "error" else Diagnostic(d.file, d.line, d.column, d.message)


def check_files(
    paths: Iterable[str | Path],
    *,
    allow_unsafe: bool = False,
    functions: Iterable[str] = (),
    warnings: bool = False,
    strict: bool = False,
) -> list[Diagnostic]:
    """Located diagnostics for rule files (every file's: what cannot be read or parsed, and the
    validation of the files that parse), as `check_sources`. Never raises on bad rule text or
    unreadable files: they become diagnostics.
    """
    sources, read_diags, line_rows = _read(paths)
    return read_diags + _locate_in_tables(
        check_sources(sources, allow_unsafe=allow_unsafe, functions=functions, warnings=warnings, strict=strict),
        line_rows,
    )


def knowledge_base_from_sources(
    name: str,
    sources: list[tuple[str, str]],
    *,
    allow_unsafe: bool = False,
    functions: Iterable[str] = (),
    strict: bool = False,
) -> KnowledgeBase:
    """Build a KnowledgeBase from (filename, text) pairs.

    Warnings (what CLIPS reports but loads past) do not stop loading; they are in
    `kb.warnings`, and skipped constructs in `kb.skipped`. With `strict`, they are errors.

    Raises:
        RuleSyntaxError: a file is not well-formed (all syntax diagnostics).
        UnsafeConstructError: an unsafe function is called and allow_unsafe is False (all diagnostics).
        RuleValidationError: anything else the validator rejects (all diagnostics).
    """
    functions = frozenset(functions)
    modules, diags, v, notes_obj = _analyse(sources, allow_unsafe, functions)
    if v is None:
        parsed = {m.filename for m in modules}
        errors = [_as_error(d) for d in diags] if strict else [d for d in diags if d.severity == "error"]
        raise RuleSyntaxError(errors, [f for f, _ in sources if f not in parsed])
    errors = [_as_error(d) for d in diags] if strict else [d for d in diags if d.severity == "error"]
    if v.unsafe:
        raise UnsafeConstructError(errors)
    if errors:
        raise RuleValidationError(errors)
    skipped = v.skipped
    constructs = [c for m in modules for c in m.constructs if not any(c is s for s in skipped)]
    kb = KnowledgeBase(
        name=name,
        version=content_version(sources),
        sources=list(sources),
        modules=modules,
        constructs=constructs,
        templates={bare(c.name): c for c in constructs if isinstance(c, ast.TemplateDef)},
        rules=rule_keys([c for c in constructs if isinstance(c, ast.RuleDef)]),
        functions={bare(c.name): c for c in constructs if isinstance(c, ast.FunctionDef)},
        facts={bare(c.name): c for c in constructs if isinstance(c, ast.FactsDef)},
        globals={a.name for c in constructs if isinstance(c, ast.GlobalDef) for a in c.assignments},
        python_functions=functions,
        allow_unsafe=allow_unsafe,
        warnings=[d for d in diags if d.severity == "warning"],
        skipped=list(skipped),
    )
    _apply(kb, notes_obj)
    return kb


def _apply(kb: KnowledgeBase, notes: Annotations) -> None:
    kb.askable = set(notes.askable)
    kb.askable_specs = dict(notes.askable)
    kb.rule_certainty = dict(notes.rule_cf)
    kb.facts_certainty = dict(notes.facts_cf)
    kb.certainty_factors = notes.certainty_factors


def load_knowledge_base(
    paths: Iterable[str | Path] | str | Path,
    *,
    name: str | None = None,
    allow_unsafe: bool = False,
    functions: Iterable[str] = (),
    strict: bool = False,
) -> KnowledgeBase:
    """Read, parse and validate rule files (in the given order) into a KnowledgeBase.

    Args:
        paths: one path or several; `name` defaults to the first file's stem.
        allow_unsafe: permit functions that reach the operating system (see `rules.safety`).
        functions: names of Python functions the caller registers with the engine.
        strict: refuse files with warnings too (see `knowledge_base_from_sources`).

    Raises:
        RuleError (RuleSyntaxError / UnsafeConstructError / RuleValidationError) with all diagnostics;
        unreadable files raise RuleError with a diagnostic naming the file.
    """
    if isinstance(paths, (str, Path)):
        paths = [paths]
    paths = list(paths)
    if not paths:
        raise RuleError([Diagnostic("<none>", 1, 1, "no rule files given")])
    sources, read_diags, line_rows = _read(paths)
    unread = list(dict.fromkeys(d.file for d in read_diags))
    if read_diags and not sources:
        raise RuleError(read_diags, unread)
    try:
        kb = knowledge_base_from_sources(
            name or Path(paths[0]).stem, sources, allow_unsafe=allow_unsafe, functions=functions, strict=strict
        )
    except RuleError as exc:  # with the files that could not be read: every file's errors in one report
        diags = _locate_in_tables(exc.diagnostics, line_rows) if line_rows else exc.diagnostics
        raise type(exc)(read_diags + diags, unread + exc.unchecked) from None
    if read_diags:
        raise RuleError(read_diags, unread)
    kb.warnings = _locate_in_tables(kb.warnings, line_rows)
    return kb


def knowledge_base_from_text(
    name: str, text: str, *, allow_unsafe: bool = False, functions: Iterable[str] = (), filename: str | None = None
) -> KnowledgeBase:
    """A KnowledgeBase from one text (filename defaults to `<name>.clp`). Raises as `load_knowledge_base`."""
    return knowledge_base_from_sources(
        name, [(filename or f"{name}.clp", text)], allow_unsafe=allow_unsafe, functions=functions
    )
