"""`workbench kb ask` (backward chaining) and `workbench kb explain` (HOW / WHY NOT).

    workbench kb ask FILE... GOAL [--facts FACTS.json] [--all | --limit N] [--proofs none|first|all]
                     [--answers ANSWERS.json] [--json] [--max-depth N] [--timeout S]
    workbench kb explain FILE... --fact PATTERN [--facts FACTS.json] [--why-not] [--backward] [--json]

`ask` proves GOAL (CLIPS pattern syntax, e.g. "(ancestor ?x otto)"); questions about askable
facts are asked on the terminal (type `why` to see the chain of goals), or answered from
ANSWERS.json (`{"(feature (name hair))": "yes", ...}`). With --json it prints
`{"answers": [{"bindings", "fact", "certainty", "truth", "proof"?}], "steps"?: [...], "count", ...}`.

`explain` runs the knowledge base forward on the real CLIPS engine and explains each fact
matching PATTERN from the recorded firings (HOW: its derivation down to the given facts); with
--why-not it explains why no such fact was derived (the rules that could conclude it and the
first premise each failed on, against the final working memory). --backward explains through
the backward prover instead (proof trees; WHY NOT with the prover).
Answers are printed as they are found; `--limit N` stops after N, `--proofs none|first|all` says which
carry their proof (JSON: one flat list of proof steps shared by the answers, `steps`, each answer's
`proof` the id of its root step). A goal over a relation nothing defines is an error (with "did you
mean"); premises over such relations are warned about.
Exit codes: ask: 0 done (also when there is no answer); 1 bad files, facts, goal or answers, or a limit
hit; 2 a goal whose field count no fact of its relation has (`(parent ?x ?y ?z)` when parents have 2).
explain: 1 also when no fact matches the pattern (HOW).
"""

from __future__ import annotations

import asyncio
import json as jsonlib
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from chaining.backward.results import DEFAULT_MAX_DEPTH

from .facts_file import read_facts_file

FACTS_HELP = (
    'JSON list of facts ({"template": "person", "slots": {...}} or {"template": "parent", '
    "\"values\": [...]}), as for `kb run`; '-' reads stdin."
)


def _fail(message: str) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(1)


def load_or_exit(files: list[Path], allow_unsafe: bool):
    """The knowledge base of `files` (kb ask, explain, show); located errors on stderr and exit 1."""
    import rules

    from .kb_check import allow_unsafe_setting

    try:
        return rules.load_knowledge_base(files, allow_unsafe=allow_unsafe_setting(allow_unsafe))
    except rules.RuleError as exc:
        for d in exc.diagnostics:
            typer.echo(str(d), err=True)
        _fail(f"{len(exc.diagnostics)} error(s) in the knowledge base")


def _read_answer(prompt: str) -> str:
    """Ask on stderr and read one line of stdin (click's prompt writes a space to stdout, which broke
    `kb ask --json` output); end of input aborts like Ctrl-D at a prompt (exit 1)."""
    import sys

    sys.stderr.write(prompt + ": ")
    sys.stderr.flush()
    line = sys.stdin.readline()
    if not line:
        typer.echo("Aborted: no answer (end of input).", err=True)
        raise typer.Exit(1)
    return line.strip()


def _terminal_provider(console: Console):
    from chaining.backward import PersonProvider
    from chaining.explain import why_tree

    def ask(q) -> Any:
        allowed = (
            [str(a) for a in q.allowed] if q.allowed is not None else (["yes", "no"] if q.ask_slot is None else None)
        )
        choices = f" ({'/'.join(allowed)}/unknown/why)" if allowed else " (a value, unknown or why)"
        while True:
            answer = _read_answer(q.text + choices)
            if answer.lower() == "why":
                Console(stderr=True).print(why_tree(q))
                continue
            if allowed and answer not in allowed and answer.lower() not in ("unknown", "yes", "no"):
                typer.echo(f"please answer one of: {', '.join(allowed)}, unknown (or why)", err=True)
                continue
            return answer

    return PersonProvider(ask)


def ask(
    files_and_goal: Annotated[
        list[str], typer.Argument(metavar="FILE... GOAL", help="Rule files, then the goal, e.g. '(ancestor ?x otto)'.")
    ],
    facts: Annotated[Path | None, typer.Option("--facts", help=FACTS_HELP)] = None,
    all_answers: Annotated[bool, typer.Option("--all", help="All answers (default: the first).")] = False,
    limit: Annotated[
        int | None, typer.Option("--limit", min=1, help="Stop after N answers (default 1; --all: no limit).")
    ] = None,
    proofs: Annotated[
        str,
        typer.Option(
            "--proofs",
            help="Which answers carry their proof: none, first or all (default: all in text, none with --json).",
        ),
    ] = "",
    answers: Annotated[
        Path | None, typer.Option("--answers", help="JSON object scripting the answers to questions.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    max_depth: Annotated[
        int, typer.Option("--max-depth", min=1, help="Most nested subgoals (a memory limit; default 100,000).")
    ] = DEFAULT_MAX_DEPTH,
    timeout: Annotated[float, typer.Option("--timeout", min=0.001, help="Seconds before giving up.")] = 30.0,
    allow_unsafe: Annotated[bool, typer.Option("--allow-unsafe", help="Permit functions that reach the OS.")] = False,
    models: Annotated[
        Path | None,
        typer.Option(
            "--models",
            help="Model catalogue for the model-backed relations (;@model); default: models/catalog.yaml.",
        ),
    ] = None,
) -> None:
    """Prove a goal backwards; print each answer's bindings and proof (HOW) as it is found."""
    from chaining.backward import BackwardError, ProverConfig, ScriptedProvider, Session, parse_goal
    from chaining.backward.check import unknown_in_goal, unknown_premises, wrong_arity_in_goal
    from chaining.explain import how_tree

    if len(files_and_goal) < 2:
        _fail("give at least one rule file and then the goal, e.g. kb ask family.clp '(ancestor ?x otto)'")
    mode = proofs or ("none" if as_json else "all")
    if mode not in ("none", "first", "all"):
        _fail(f"--proofs must be none, first or all, got {proofs!r}")
    if all_answers and limit is not None:
        _fail("give --all or --limit N, not both")
    *files, goal = files_and_goal
    kb = load_or_exit([Path(f) for f in files], allow_unsafe)
    fact_list = read_facts_file(facts)
    console = Console()
    found: list[dict] = []  # JSON answers (without proofs) or nothing in text mode
    roots: list = []

    def on_answer(a) -> None:
        n = len(found) + 1 if as_json else on_answer.n + 1
        on_answer.n = n
        show_proof = mode == "all" or (mode == "first" and n == 1)
        if as_json:
            found.append(a.to_dict(proof=False))
            if show_proof:
                roots.append((len(found) - 1, a.proof))
            return
        console.print(_answer_line(n, a), markup=False)
        if show_proof:
            console.print(how_tree(a.proof))

    on_answer.n = 0
    try:
        provider = ScriptedProvider.from_json_file(answers) if answers else _terminal_provider(console)
        session = Session(
            kb,
            facts=fact_list,
            provider=provider,
            models=_catalog_models(kb, models, timeout),
            config=ProverConfig(max_depth=max_depth, timeout=timeout),
        )
        given = set(session.index.by_relation)
        for u in unknown_premises(kb, given):
            typer.echo(f"warning: {u}", err=True)
        unknown = unknown_in_goal(kb, parse_goal(goal, kb), given)
        if unknown:  # as Prolog's unknown procedure: an error, not "no"
            _fail("; ".join(str(u) for u in unknown))
        wrong = wrong_arity_in_goal(kb, parse_goal(goal, kb), session.index.field_counts())
        if wrong:  # a usage error, as Prolog's unknown procedure parent/3 (exit 2)
            typer.echo("error: " + "; ".join(f"goal:1:{col}: {msg}" for col, msg in wrong), err=True)
            raise typer.Exit(2)
        result = session.prove_sync(
            goal, limit=None if all_answers else (limit or 1), on_answer=on_answer, keep=False, proofs=mode != "none"
        )
    except BackwardError as exc:
        _fail(_located(facts, exc))
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
        typer.echo(jsonlib.dumps(doc))
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
        typer.echo(f"warning: {w}", err=True)


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
            typer.echo(str(d), err=True)
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


def explain(
    files: Annotated[list[Path], typer.Argument(help="Rule files (.clp), loaded in order as one knowledge base.")],
    fact: Annotated[str, typer.Option("--fact", help="Pattern of the fact to explain, e.g. '(ancestor adam ?x)'.")],
    facts: Annotated[Path | None, typer.Option("--facts", help=FACTS_HELP)] = None,
    why_not: Annotated[bool, typer.Option("--why-not", help="Explain why no such fact was derived.")] = False,
    backward: Annotated[bool, typer.Option("--backward", help="Explain with the backward prover instead.")] = False,
    answers: Annotated[Path | None, typer.Option("--answers", help="Scripted answers (with --backward).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    allow_unsafe: Annotated[bool, typer.Option("--allow-unsafe", help="Permit functions that reach the OS.")] = False,
) -> None:
    """HOW a fact was derived (from the recorded forward firings), or WHY NOT."""
    from chaining import explain as ex
    from chaining.backward import BackwardError, ScriptedProvider, Session

    kb = load_or_exit(files, allow_unsafe)
    fact_list = read_facts_file(facts)
    console = Console()
    try:
        if backward:
            provider = ScriptedProvider.from_json_file(answers) if answers else _terminal_provider(console)
            session = Session(kb, facts=fact_list, provider=provider)
            if why_not:
                w = asyncio.run(ex.why_not(session, fact))
                _emit(console, as_json, w.to_dict(), w.tree())
                return
            result = session.prove_sync(fact)
            doc = {
                "pattern": fact,
                "direction": "backward",
                "facts": [
                    {"fact": a.proof.fact and ex.fact_text(a.proof.fact), "proof": a.proof.to_dict()}
                    for a in result.answers
                ],
            }
            trees = [ex.how_tree(a.proof) for a in result.answers]
            _emit_many(console, as_json, doc, trees, f"no proof of {fact}")
            return
        from chaining.forward import ForwardEngine, ForwardError

        try:
            engine = ForwardEngine.from_knowledge_base(kb)
            try:
                result = engine.evaluate(fact_list)
            finally:
                engine.close()
        except ForwardError as exc:
            _fail(_located(facts, exc))
        if why_not:
            w = ex.forward_why_not(kb, result, fact)
            _emit(console, as_json, w.to_dict(), w.tree())
            return
        matching = _matching_fact_ids(kb, result, fact)
        derivations = [ex.forward_derivation(result, fid) for fid in matching]
        doc = {"pattern": fact, "direction": "forward", "facts": [d.to_dict() for d in derivations]}
        _emit_many(
            console,
            as_json,
            doc,
            [d.tree() for d in derivations],
            f"no fact matching {fact} in the final working memory (try --why-not)",
        )
    except BackwardError as exc:
        _fail(_located(facts, exc))
    except ValueError as exc:
        _fail(str(exc))


def _located(facts: Path | None, exc: Exception) -> str:
    """The error message, prefixed with the facts file when it names one of its facts (`facts[2]...`)."""
    msg = str(exc)
    if facts is not None and msg.startswith("facts["):
        return f"{'stdin' if str(facts) == '-' else facts}: {msg}"
    return msg


def _matching_fact_ids(kb, result, pattern: str) -> list[int]:
    from chaining.backward import Session

    session = Session(kb, facts=result.facts, use_rules=False, include_deffacts=False, keep_ids=True)
    proved = session.prove_sync(pattern)
    return [a.fact.id for a in proved.answers if a.fact is not None and a.fact.id is not None]


def _emit(console: Console, as_json: bool, doc: dict, tree) -> None:
    if as_json:
        typer.echo(jsonlib.dumps(doc))
    else:
        console.print(tree)


def _emit_many(console: Console, as_json: bool, doc: dict, trees: list, empty: str) -> None:
    """Print the explanations; exit 1 when there is none (no fact matches the pattern)."""
    if as_json:
        typer.echo(jsonlib.dumps(doc))
    else:
        if not trees:
            console.print(empty, markup=False)
        for t in trees:
            console.print(t)
    if not trees:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("ask")(ask)
    app.command("explain")(explain)
