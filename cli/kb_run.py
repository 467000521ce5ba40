"""`workbench kb run FILE... [--facts FACTS.json] [--strategy NAME] [--max-firings N] [--json]`.

Forward chaining on the real CLIPS engine. Without `--json` it prints exactly what the rules
print, as they print it, then one summary line on stderr; with `--json` one object
`{"output", "firings": [{"rule", "facts"}], "facts": [{"id", "template", "slots"}], ...}`.
Programs that ask questions (`read`, `readline`, `read-number`, `get-char` on `stdin`) read
this process's standard input, as the `clips` executable does: `printf 'yes\nno\n' | workbench
kb run animal.clp` prints what `clips` prints for those answers (no echo; the end of input is
CLIPS's `EOF`). Time spent waiting for an answer does not count against `--timeout`.
Exit codes: 0 ok; 1 the files, the facts or a rule failed; 2 the firing, time or memory limit
was hit; 130 interrupted (Ctrl-C) while waiting for input.
"""

from __future__ import annotations

import json as jsonlib
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from .facts_file import read_facts_file
from .outputs import c_stdout_to_stderr

FACTS_HELP = (
    'JSON file with a list of facts: {"template": "person", "slots": {"name": "ann"}} for template '
    'facts, {"template": "parent", "values": ["tom", "bob"]} for ordered facts (\'-\' reads stdin). '
    "A JSON string becomes a CLIPS symbol when it is one token (dog, big-red) and the slot accepts "
    'symbols, otherwise a CLIPS string ("Rex the dog", or any value of a (type STRING) slot).'
)


def run(
    files: Annotated[list[Path], typer.Argument(help="Rule files (.clp), loaded in order as one knowledge base.")],
    facts: Annotated[Path | None, typer.Option("--facts", help=FACTS_HELP)] = None,
    strategy: Annotated[
        str, typer.Option("--strategy", help="depth, breadth, simplicity, complexity, lex, mea or random.")
    ] = "depth",
    max_firings: Annotated[
        int | None,
        typer.Option(
            "--max-firings",
            help="Fire at most N rules, as CLIPS's (run N); exit code 2 when more would fire. 0 fires none (the "
            "working memory after reset and --facts); negative: no limit.",
        ),
    ] = None,
    timeout: Annotated[
        float | None,
        typer.Option("--timeout", min=0.001, help="Time limit of the run in seconds (default 60; loading excluded)."),
    ] = None,
    load_timeout: Annotated[
        float, typer.Option("--load-timeout", min=0.001, help="Time limit on loading the files, seconds.")
    ] = 120.0,
    memory_limit: Annotated[
        int | None,
        typer.Option(
            "--memory-limit",
            min=1,
            help="MiB of memory CLIPS may hold during the run (exit code 2 past it; default: the setting "
            "WORKBENCH_RULES__MEMORY_LIMIT_MIB, 512).",
        ),
    ] = None,
    seed: Annotated[
        int | None, typer.Option("--seed", help="Seed CLIPS's random generator (for --strategy random).")
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print one JSON object instead of the program's text.")
    ] = False,
    allow_unsafe: Annotated[bool, typer.Option("--allow-unsafe", help="Permit functions that reach the OS.")] = False,
) -> None:
    """Run knowledge-base files forward (CLIPS) on the given facts and print what the rules print."""
    import rules
    from chaining.forward import (
        Console,
        EngineConfig,
        ForwardEngine,
        ForwardError,
        RuleExecutionError,
        RunawayError,
        Strategy,
    )
    from chaining.forward.errors import FactAssertError

    try:
        Strategy.parse(strategy)
    except ValueError as exc:
        _fail(str(exc))
    from .kb_check import allow_unsafe_setting

    try:
        kb = rules.load_knowledge_base(files, allow_unsafe=allow_unsafe_setting(allow_unsafe))
    except rules.RuleError as exc:
        for d in exc.diagnostics:
            typer.echo(str(d), err=True)
        _fail(f"{len(exc.diagnostics)} error(s) in the knowledge base")
    except OSError as exc:
        _fail(f"cannot read {exc.filename}: {exc.strerror}")
    fact_list = read_facts_file(facts)
    # The program's terminal: standard input; its output goes out as it is printed (not with --json).
    console = Console.standard(echo_output=not as_json)
    config = EngineConfig(
        workers=1,
        max_firings=None,
        timeout=timeout or 60.0,
        load_timeout=load_timeout,
        memory_limit=memory_limit << 20 if memory_limit else _setting_memory_limit(),
        console=console,
    )
    try:
        engine = ForwardEngine.from_knowledge_base(kb, config=config)
    except ForwardError as exc:
        _fail(str(exc))
    for message in engine.load_messages:  # constructs CLIPS skipped while loading, as its (load) reports them
        typer.echo(f"warning: {message}", err=True)
    code = 0
    error: str | None = None
    try:
        result = engine.evaluate(fact_list, strategy=strategy, max_firings=max_firings, timeout=timeout, seed=seed)
    except RunawayError as exc:
        result, error, code = exc.partial, str(exc), 2
    except RuleExecutionError as exc:
        result, error, code = exc.partial, str(exc), 1
    except (ForwardError, rules.FactError) as exc:
        _fail(
            f"{'stdin' if str(facts) == '-' else facts}: {exc}"
            if isinstance(exc, FactAssertError) and facts
            else str(exc)
        )
    finally:
        with c_stdout_to_stderr():  # the environments are destroyed here (CLIPS may print a leak report)
            engine.close()
    if as_json:
        doc: dict[str, Any] = result.to_dict()
        doc["knowledge_base"] = {"name": kb.name, "version": kb.version}
        if error:
            doc["error"] = error
        typer.echo(
            jsonlib.dumps(rules.facts.finite_json(doc), allow_nan=False)
        )  # (exp 1000): "Infinity", as everywhere
    else:  # the output went to stdout as it was printed (the console)
        sys.stdout.flush()
        if result.messages:
            sys.stderr.write(result.messages if result.messages.endswith("\n") else result.messages + "\n")
        typer.echo(
            f"{kb.name} ({kb.version[:12]}): {len(result.firings)} firings, {len(result.facts)} facts, "
            f"strategy {result.strategy}, {result.seconds:.3f} s",
            err=True,
        )
    if console.interrupted:
        typer.echo("interrupted while waiting for input", err=True)
        raise typer.Exit(130)
    if error:
        typer.echo(f"error: {error}", err=True)
    raise typer.Exit(code)


def _fail(message: str) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("run")(run)


def _setting_memory_limit() -> int | None:
    """`WORKBENCH_RULES__MEMORY_LIMIT_MIB` in bytes (None: no limit); a bad setting exits 1 naming it."""
    from workbench.config import ConfigError, get_settings

    try:
        return get_settings().rules.memory_limit_bytes
    except ConfigError as exc:
        _fail(str(exc))
        raise
