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
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from .facts_file import read_facts_file
from .kb_ask_run import DEFAULT_MAX_DEPTH, _fail, _located, _terminal_provider, load_or_exit, run_ask

__all__ = ["ask", "explain", "load_or_exit", "register"]

FACTS_HELP = (
    'JSON list of facts ({"template": "person", "slots": {...}} or {"template": "parent", '
    "\"values\": [...]}), as for `kb run`; '-' reads stdin."
)


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
    run_ask(
        files_and_goal, facts, all_answers, limit, proofs, answers, as_json, max_depth, timeout, allow_unsafe, models
    )


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
        _refuse_unknown_relations(kb, fact, fact_list)
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
            if result.answers and not as_json and not console.is_terminal:
                # plain lines, never wrapped: a deep proof's guides would leave rich no width for its labels
                for a in result.answers:
                    sys.stdout.writelines(line + "\n" for line in ex.how_lines(a.proof))
                return
            trees = [ex.how_tree(a.proof) for a in result.answers]
            _emit_many(console, as_json, doc, trees, f"no proof of {fact}")
            return
        from chaining.forward import EngineConfig, ForwardEngine, ForwardError

        try:
            # the versions a modify or retract ended: what an earlier firing matched is shown, not just its id
            engine = ForwardEngine.from_knowledge_base(kb, config=EngineConfig(trace_versions=True))
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


def _refuse_unknown_relations(kb, pattern: str, given: list) -> None:
    """As `kb ask`: a pattern over a relation that no rule, fact, template, askable or given fact
    defines is an error with a "did you mean" (exit 1), not an empty HOW or a WHY NOT."""
    from chaining.backward.check import unknown_in_goal
    from chaining.backward.goals import parse_goal

    unknown = unknown_in_goal(kb, parse_goal(pattern, kb), {f.template for f in given})
    if unknown:
        _fail("; ".join(str(u) for u in unknown))


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
