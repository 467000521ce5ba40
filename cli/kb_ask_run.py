"""The body of `workbench kb ask`, importable without typer (whose parameter handling imports
pydantic, about a second of start-up): `cli.main` sends the plain command line here
(`fast_main`), and the typer command (`cli.kb_ask.ask`) runs the same `run_ask`."""

from __future__ import annotations

import json as jsonlib
import sys
from pathlib import Path
from typing import Any

DEFAULT_MAX_DEPTH = 100_000  # chaining.backward.results.DEFAULT_MAX_DEPTH (a test checks they agree)


def _echo_err(message: str) -> None:
    sys.stderr.write(message + "\n")
    sys.stderr.flush()


def _fail(message: str, code: int = 1) -> None:
    _echo_err(f"error: {message}")
    raise SystemExit(code)


def load_or_exit(files: list[Path], allow_unsafe: bool):
    """The knowledge base of `files` (kb ask, explain, show); located errors on stderr and exit 1
    (exit 2 for invalid settings)."""
    import rules

    from .kb_check_fast import unsafe_setting

    try:
        allow = unsafe_setting(allow_unsafe)
    except Exception as exc:
        from workbench.config import ConfigError

        if not isinstance(exc, ConfigError):
            raise
        _fail(str(exc), 2)
    try:
        return rules.load_knowledge_base(files, allow_unsafe=allow)
    except rules.RuleError as exc:
        for d in exc.diagnostics:
            _echo_err(str(d))
        _fail(f"{len(exc.diagnostics)} error(s) in the knowledge base")


def _read_answer(prompt: str) -> str:
    """Ask on stderr and read one line of stdin (click's prompt writes a space to stdout, which broke
    `kb ask --json` output); end of input aborts like Ctrl-D at a prompt (exit 1)."""
    import sys

    sys.stderr.write(prompt + ": ")
    sys.stderr.flush()
    line = sys.stdin.readline()
    if not line:
        _echo_err("Aborted: no answer (end of input).")
        raise SystemExit(1)
    return line.strip()


def _terminal_provider(console: Any):
    from chaining.backward import PersonProvider

    def ask(q) -> Any:
        allowed = (
            [str(a) for a in q.allowed] if q.allowed is not None else (["yes", "no"] if q.ask_slot is None else None)
        )
        choices = f" ({'/'.join(allowed)}/unknown/why)" if allowed else " (a value, unknown or why)"
        while True:
            answer = _read_answer(q.text + choices)
            if answer.lower() == "why":
                from rich.console import Console

                from chaining.explain import why_tree

                Console(stderr=True).print(why_tree(q))
                continue
            if allowed and answer not in allowed and answer.lower() not in ("unknown", "yes", "no"):
                _echo_err(f"please answer one of: {', '.join(allowed)}, unknown (or why)")
                continue
            return answer

    return PersonProvider(ask)


def run_ask(
    files_and_goal: list[str],
    facts: Path | None = None,
    all_answers: bool = False,
    limit: int | None = None,
    proofs: str = "",
    answers: Path | None = None,
    as_json: bool = False,
    max_depth: int = DEFAULT_MAX_DEPTH,
    timeout: float = 30.0,
    allow_unsafe: bool = False,
    models: Path | None = None,
) -> None:
    """`kb ask` (see `cli.kb_ask`): prints the answers as they are found; raises SystemExit(1) for bad
    files, facts, goal or answers or a limit hit, SystemExit(2) for a goal of the wrong arity."""
    from chaining.backward import BackwardError, ProverConfig, ScriptedProvider, Session, parse_goal
    from chaining.backward.check import unknown_in_goal, unknown_premises, wrong_arity_in_goal

    if len(files_and_goal) < 2:
        _fail("give at least one rule file and then the goal, e.g. kb ask family.clp '(ancestor ?x otto)'")
    mode = proofs or ("none" if as_json else "all")
    if mode not in ("none", "first", "all"):
        _fail(f"--proofs must be none, first or all, got {proofs!r}")
    if all_answers and limit is not None:
        _fail("give --all or --limit N, not both")
    *files, goal = files_and_goal
    kb = load_or_exit([Path(f) for f in files], allow_unsafe)
    fact_list: list = []
    if facts is not None:
        from .facts_file import read_facts_file

        fact_list = read_facts_file(facts)
    console: Any = None  # rich, for text output only (--json prints no rich text: its import is start-up)
    if not as_json:
        from rich.console import Console

        console = Console()
    found: list[dict] = []  # JSON answers with proofs (--proofs first/all), or nothing
    roots: list = []
    stream = _JsonAnswers(goal) if as_json and mode == "none" else None
    plain = not as_json and not console.is_terminal

    def on_answer(a) -> None:
        n = on_answer.n + 1
        on_answer.n = n
        show_proof = mode == "all" or (mode == "first" and n == 1)
        if stream is not None:
            stream.add(a)
            return
        if as_json:
            found.append(a.to_dict(proof=False))
            if show_proof:
                roots.append((len(found) - 1, a.proof))
            return
        if plain:  # not a terminal: one plain line (rich's per-line rendering was ~0.1 ms an answer)
            sys.stdout.write(_one_line(_answer_line(n, a)) + "\n")
        else:
            console.print(_one_line(_answer_line(n, a)), markup=False)
        if show_proof and plain:  # plain lines: a deep proof stays one line a node (rich wraps to the width)
            from chaining.explain import how_lines

            sys.stdout.writelines(_one_line(line) + "\n" for line in how_lines(a.proof))
        elif show_proof:
            from chaining.explain import how_tree

            console.print(how_tree(a.proof))

    on_answer.n = 0
    catalog_models = None
    try:
        provider = ScriptedProvider.from_json_file(answers) if answers else _terminal_provider(console)
        catalog_models = _catalog_models(kb, models, timeout)
        session = Session(
            kb,
            facts=fact_list,
            provider=provider,
            models=catalog_models,
            config=ProverConfig(max_depth=max_depth, timeout=timeout),
        )
        given = set(session.index.by_relation)
        for u in unknown_premises(kb, given):
            _echo_err(f"warning: {u}")
        unknown = unknown_in_goal(kb, parse_goal(goal, kb), given)
        if unknown:  # as Prolog's unknown procedure: an error, not "no"
            _fail("; ".join(str(u) for u in unknown))
        wrong = wrong_arity_in_goal(kb, parse_goal(goal, kb), session.index.field_counts())
        if wrong:  # a usage error, as Prolog's unknown procedure parent/3 (exit 2)
            _fail("; ".join(f"goal:1:{col}: {msg}" for col, msg in wrong), 2)
        result = session.prove_sync(
            goal, limit=None if all_answers else (limit or 1), on_answer=on_answer, keep=False, proofs=mode != "none"
        )
    except BackwardError as exc:
        if stream is not None:
            stream.close({"error": _located(facts, exc), "count": on_answer.n})
        _fail(_located(facts, exc))
    except BaseException as exc:  # e.g. end of input at a question: the streamed document stays valid JSON
        if stream is not None:
            why = "stopped" if isinstance(exc, (SystemExit, KeyboardInterrupt)) else f"{type(exc).__name__}: {exc}"
            stream.close({"error": why, "count": on_answer.n})
        raise
    finally:  # the models it loaded stop their batcher threads (kb ask run in-process leaves none behind)
        if catalog_models is not None:
            catalog_models.catalog.close()
    if stream is not None:
        doc = result.to_dict(proofs="none")
        del doc["goal"], doc["answers"]
        doc["count"] = result.count
        doc["knowledge_base"] = {"name": kb.name, "version": kb.version}
        stream.close(doc)
        return
    if as_json:
        from chaining.backward.proof import proofs_to_steps

        doc = result.to_dict(proofs="none")
        doc["answers"] = found
        if roots:
            steps, ids = proofs_to_steps([p for _, p in roots])
            for (i, _), root_id in zip(roots, ids):
                found[i]["proof"] = root_id
            doc["steps"] = steps
        doc["count"] = result.count
        doc["knowledge_base"] = {"name": kb.name, "version": kb.version}
        print(jsonlib.dumps(doc))
        return
    if not result.count:
        console.print(f"no: {goal} cannot be proved", markup=False)
    if not result.complete:
        more = "first answer only" if result.count == 1 else f"first {result.count} answers"
        console.print(f"({more}; --all for every answer)", markup=False, style="dim")
    for s in result.skipped_rules:
        console.print(f"skipped rule {s.rule}: {s.reason}", markup=False, style="dim")
    for call in result.model_calls:
        console.print(
            f"model {call['model']}@{call['version'][:12]}: one call, batch {call['batch']}", markup=False, style="dim"
        )
    for w in result.warnings:
        _echo_err(f"warning: {w}")


class _JsonAnswers:
    """`kb ask --json` without proofs: the document written as the answers are found, in chunks of
    `CHUNK` answers (no list of answers kept): `{"goal": ..., "answers": [...], <the rest of
    ProofResult.to_dict>, "count", "knowledge_base"}`. Nothing is written before the first answer
    (an error before it leaves stdout empty); an error after it closes the document with an `"error"`
    field, so stdout is always one valid JSON document."""

    CHUNK = 1000

    def __init__(self, goal: str):
        self.goal = goal
        self.parts: list[str] = []
        self.started = False
        self.closed = False
        self.encode = jsonlib.JSONEncoder().encode  # as json.dumps with its default settings
        self._keys: dict[str, str] = {}  # variable and relation names -> their JSON strings
        self._values: dict[tuple, tuple[str, str]] = {}  # (type, value) -> (JSON, CLIPS text in JSON)

    def add(self, a) -> None:
        """Append answer `a`'s JSON text: the text `json.dumps` gives its `to_dict(proof=False)`, built
        from each value's JSON and CLIPS text, made once per distinct value (`_value`) and joined."""
        from rules.facts import IMPLIED

        e = self.encode
        value = self._value
        fields = []
        for k, v in a.bindings.items():
            fields.append(f"{self._key(k)}: {value(v)[0]}")
        fact = a.fact
        if fact is None:
            fact_json = "null"
        elif len(fact.slots) == 1 and IMPLIED in fact.slots:  # `terms.fact_text` of an ordered fact
            inner = [self._key(fact.template)[1:-1]] + [value(v)[1] for v in fact.slots[IMPLIED]]
            fact_json = '"(' + " ".join(inner) + ')"'
        else:
            from chaining.backward.terms import fact_text

            fact_json = e(fact_text(fact))
        self.parts.append(
            f'{{"bindings": {{{", ".join(fields)}}}, "fact": {fact_json}, '
            f'"certainty": {e(a.certainty)}, "truth": {e(a.truth)}}}'
        )
        if len(self.parts) >= self.CHUNK:
            self._flush()

    def _key(self, text: str) -> str:
        got = self._keys.get(text)
        if got is None:
            got = self._keys[text] = self.encode(text)
        return got

    def _value(self, v) -> tuple[str, str]:
        """(JSON of `json_value(v)`, `show(v)` escaped as inside a JSON string) of a value, cached by type
        and value (a symbol and a string of the same text, 1 and 1.0, stay apart; multifields uncached)."""
        tv = (type(v), v)
        got = self._values.get(tv) if type(v) is not tuple else None
        if got is None:
            from chaining.backward.terms import json_value, show

            got = (self.encode(json_value(v)), self.encode(show(v))[1:-1])
            if type(v) is not tuple and len(self._values) < 100_000:
                self._values[tv] = got
        return got

    def _flush(self) -> None:
        out = sys.stdout
        if not self.started:
            out.write(f'{{"goal": {self.encode(self.goal)}, "answers": [')
            self.started = True
        else:
            out.write(", ")
        out.write(", ".join(self.parts))
        self.parts.clear()

    def close(self, rest: dict) -> None:
        """Write the answers still held, then `rest` (the document's other fields) and the end."""
        if self.closed:
            return
        self.closed = True
        if self.parts:
            self._flush()
        if not self.started:
            if "error" in rest:
                return  # nothing written: the error goes to stderr alone
            sys.stdout.write(f'{{"goal": {self.encode(self.goal)}, "answers": [')
        tail = self.encode(rest)[1:]
        sys.stdout.write("]" + (", " + tail if tail != "}" else "}") + "\n")
        sys.stdout.flush()


def _catalog_models(kb, catalog_file: Path | None, timeout: float):
    """The models answering `kb`'s model-backed relations (None when it has none), loaded on first use
    through the pipelines' catalogue; an unknown model is a located error (exit 1)."""
    if not any(spec.model is not None for spec in kb.askable_specs.values()):
        return None
    from workbench.backward_models import CatalogModels, check_bindings
    from workbench.pipeline.catalog import ModelCatalog
    from workbench.workbench import default_model_catalog

    if catalog_file is not None and not catalog_file.is_file():
        _fail(f"--models {catalog_file}: no such catalogue file")
    catalog = ModelCatalog(catalog_file or default_model_catalog())
    bad = check_bindings(kb, catalog, load=False)
    if bad:
        for d in bad:
            _echo_err(str(d))
        _fail(f"{len(bad)} error(s) in the knowledge base's ;@model annotations")
    return CatalogModels(catalog, timeout_s=timeout)


def _answer_line(n: int, a) -> str:
    """`answer N: ?x = v ...` or `yes`; with certainty factors a negative certainty reads as no."""
    from chaining.backward.terms import show

    b = " ".join(f"?{k} = {'(' + show(v) + ')' if isinstance(v, tuple) else show(v)}" for k, v in a.bindings.items())
    if a.certainty is not None and a.certainty < 0:
        return f"answer {n}: no (certainty {a.certainty:.4g})" + (f"  for {b}" if b else "")
    if a.truth == "undefined":
        return f"answer {n}: undefined (well-founded semantics: neither provable nor refutable)" + (
            f"  for {b}" if b else ""
        )
    cf = f"  (certainty {a.certainty:.4g})" if a.certainty is not None else ""
    return f"answer {n}: {b or 'yes'}{cf}"


def _one_line(text: str) -> str:
    """`text` on one line: a line break inside a string value written `\\n` (`\\r`), so that each answer
    (and each proof node in plain output) is one line. Unambiguous inside a quoted CLIPS string, where a
    backslash is itself written `\\\\`; CLIPS would print the break itself (--json has the exact value)."""
    if "\n" in text or "\r" in text:
        return text.replace("\r", "\\r").replace("\n", "\\n")
    return text


def _located(facts: Path | None, exc: Exception) -> str:
    """The error message, prefixed with the facts file when it names one of its facts (`facts[2]...`)."""
    msg = str(exc)
    if facts is not None and msg.startswith("facts["):
        return f"{'stdin' if str(facts) == '-' else facts}: {msg}"
    return msg


_FLAGS = {"--all": "all_answers", "--json": "as_json", "--allow-unsafe": "allow_unsafe"}
_OPTIONS: dict[str, tuple[str, Any]] = {
    "--facts": ("facts", Path),
    "--limit": ("limit", int),
    "--proofs": ("proofs", str),
    "--answers": ("answers", Path),
    "--max-depth": ("max_depth", int),
    "--timeout": ("timeout", float),
    "--models": ("models", Path),
}


def fast_main(args: list[str]) -> int | None:
    """`kb ask` without typer for a plain command line (`FILE... GOAL` and the options above, each
    `--opt value`); returns the exit code, or None for anything else (help, `--opt=value`, a value
    typer would refuse): typer then handles the command line and its messages."""
    kwargs: dict[str, Any] = {}
    positional: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a in _FLAGS:
            kwargs[_FLAGS[a]] = True
        elif a in _OPTIONS and i + 1 < len(args):
            name, kind = _OPTIONS[a]
            try:
                kwargs[name] = kind(args[i + 1])
            except ValueError:
                return None
            i += 1
        elif a.startswith("-"):
            return None
        else:
            positional.append(a)
        i += 1
    if len(positional) < 2 or kwargs.get("limit", 1) < 1 or kwargs.get("max_depth", 1) < 1:
        return None
    if not kwargs.get("timeout", 1.0) >= 0.001:  # also nan (never >=): typer's usage error, exit 2
        return None
    try:
        run_ask(positional, **kwargs)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 1
    return 0
