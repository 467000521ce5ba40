"""`workbench bench rules`: forward chaining on our engine (tracing on) vs raw clipspy vs experta.

Programs (knowledge_bases/bench/): Miss Manners with 16, 32, 64 and 128 guests, Waltz line
labelling on a scene of replicated cubes, and a 10-rule gating knowledge base evaluated per
request (reset + 5 facts + run). Also the OPS5 benchmark suite's own programs on its published
data sets (knowledge_bases/bench/published/, data from `_rules_published`): rows
"published-manners-N" (N = 16, 32, 64, 128) and "published-waltz-N" (N = 12, 25, 50; the data
byte for byte CLIPS's waltzN.fct).

Rows:
    {"program", "engine": "workbench"|"clips"|"experta", "seconds", "firings", "trace", "native", "read_back", "capped",
     "vs_clips", "vs_clips_run"}
    {"program": "gating", "engine", "evals_per_s", "evals_per_cpu_s", "evaluations", "first_10k_per_s",
     "last_10k_per_s", "trace", "read_back" | "loop"}  (read_back: the final facts returned: all, or only
     the decision and gate templates, as a pipeline gate reads them)
Engines:
    workbench  `chaining.ForwardEngine.evaluate`: reset, assert the input facts, run, read back
               the working memory; `trace` says what was recorded: "firings" (rule and
               activating fact ids of every firing, from CLIPS's before-fire callback),
               "firings+facts" (also every assert/retract with the firing that made it, from
               CLIPS's assert/retract callbacks) or "none" (gating only).
               `native` names the engine's C parts in use (built from chaining/forward/*.c by
               the bootstrap; the default when built): "trace" (the C trace recorder),
               "assert" (the C fact asserter), "trace+assert", or "none" (Python callbacks
               and the Python assert loop); a "none" row sits beside the default rows.
    clips      raw clipspy at its fastest (`_rules_raw`): `Environment.load`, then reset, facts
               asserted through CLIPS's fact builder with nothing retained, run; no tracing, no
               read-back. `seconds` is reset + assert + run, `run_seconds` the `run` alone
               (`vs_clips_run` compares our whole evaluation with it).
               Gating: the issue's loop (`Template.assert_fact`, which leaks in clipspy 1.0.6)
               and the fact-builder loop with nothing retained or read back (the floor).
    experta    the same rules as an experta KnowledgeEngine (cli/benchmarks/_rules_experta.py),
               stopped at a time cap (`EXPERTA_RUN_CAP_S` per run, `EXPERTA_CAP_S` for all runs; a
               row that hit it says `"capped": true`, gives the firings done by then and a
               `note`; larger sizes of a capped program are not run).
Times are wall-clock seconds (`seconds`, `evals_per_s`) and, because the machine may be shared,
also CPU seconds of this process (`cpu_seconds`, `evals_per_cpu_s`); the load average is in EXTRA.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from ._rules_inputs import gating_facts, manners_facts, waltz_facts
from ._rules_raw import raw_clips_run

EXTRA: dict[str, Any] = {}
EXPERTA_CAP_S = 60.0  # all experta runs of the program benchmarks together
EXPERTA_RUN_CAP_S = 20.0  # one experta run
ROOT = Path(__file__).resolve().parents[2]
BENCH_KB = ROOT / "knowledge_bases" / "bench"
PUBLISHED_KB = BENCH_KB / "published"


__all__ = ["EXTRA", "gating_facts", "manners_facts", "run", "waltz_facts"]


# --- engines ----------------------------------------------------------------------------------


def _workbench(
    path: Path, facts: list, trace_facts: bool, read_back: bool = True, native: bool | None = None
) -> tuple[float, int, float]:
    import rules
    from chaining import EngineConfig, ForwardEngine
    from rules.facts import facts_from_json

    engine = ForwardEngine.from_knowledge_base(
        rules.load_knowledge_base([path]),
        config=EngineConfig(trace_facts=trace_facts, max_firings=None, timeout=None, workers=1, native=native),
    )
    data = facts_from_json(facts)
    engine.evaluate(
        data, templates=None if read_back else ()
    )  # warm-up (like the raw run's): the timed run is the second
    t, c = time.perf_counter(), time.process_time()
    result = engine.evaluate(data, templates=None if read_back else ())
    seconds, cpu = time.perf_counter() - t, time.process_time() - c
    engine.close()
    return seconds, len(result.firings), cpu


class _ExpertaBudget:
    """Time for experta: `total` seconds for all runs, at most `per_run` for one; once a program
    hits the cap at one size, its larger sizes are not run (they would hit it too)."""

    def __init__(self, total: float, per_run: float):
        self.left = total
        self.per_run = per_run
        self.capped_programs: set[str] = set()

    def run(self, family: str, engine_class, fact_types, facts) -> tuple[float | None, int, bool, str | None]:
        from chaining import EngineConfig, EvaluationTimeout, ExpertaEngine

        if family in self.capped_programs:
            return None, 0, True, "not run: a smaller size already hit the time cap"
        cap = min(self.left, self.per_run)
        if cap <= 0.5:
            return None, 0, True, "not run: the experta time budget is spent"
        engine = ExpertaEngine(engine_class, fact_types=fact_types, config=EngineConfig(max_firings=None, timeout=cap))
        t = time.perf_counter()
        try:
            result = engine.evaluate(facts, timeout=cap, max_firings=10**12)
            capped, note = False, None
        except EvaluationTimeout as exc:
            result, capped, note = exc.partial, True, f"stopped at the {cap:.1f} s cap"
            self.capped_programs.add(family)
        seconds = time.perf_counter() - t
        self.left -= seconds
        return seconds, len(result.firings), capped, note


def _program_rows(
    program: str, path: Path, facts: list, experta: tuple | None, budget: _ExpertaBudget, repeats: int
) -> list[dict]:
    """Raw CLIPS and our three variants, run in interleaved rounds (the machine's speed drifts
    over seconds; interleaving keeps that drift out of the ratios); the best round of each counts."""
    rows = []
    # read_back "none": the same work as the raw run (reset, assert, run) plus the trace;
    # "all": also the final working memory returned as data (what `kb run --json` prints).
    # native: the engine's default (its C parts when built), and the Python-only engine beside it.
    default = _native_parts()
    variants = (
        (True, "firings+facts", False, None),
        (False, "firings", True, None),
        (True, "firings+facts", True, None),
    )
    if default != "none":
        variants += ((True, "firings+facts", False, False),)
    raw: list[tuple] = []
    ours: list[list[tuple]] = [[] for _ in variants]
    for _ in range(repeats):
        raw.append(raw_clips_run(path, facts))
        for k, (trace_facts, _label, read_back, native) in enumerate(variants):
            ours[k].append(_workbench(path, facts, trace_facts, read_back, native))
    s, n, cpu, run_s = min(raw, key=lambda r: r[0])
    rows.append(
        {
            "program": program,
            "engine": "clips",
            "seconds": round(s, 4),
            "cpu_seconds": round(cpu, 4),
            "firings": n,
            "trace": "none",
            "capped": False,
            "run_seconds": round(run_s, 4),
        }
    )
    for (_trace_facts, label, read_back, native), results in zip(variants, ours):
        s2, n2, cpu2 = min(results, key=lambda r: r[0])
        rows.append(
            {
                "program": program,
                "engine": "workbench",
                "seconds": round(s2, 4),
                "cpu_seconds": round(cpu2, 4),
                "firings": n2,
                "trace": label,
                "native": default if native is None else "none",
                "read_back": "all" if read_back else "none",
                "capped": False,
                "vs_clips": round(s2 / s, 2),
                "cpu_vs_clips": round(cpu2 / cpu, 2) if cpu else None,
                "vs_clips_run": round(s2 / run_s, 2),
            }
        )
    if experta is not None:
        s3, n3, capped, note = budget.run(program.split("-")[0], *experta, facts)
        row = {
            "program": program,
            "engine": "experta",
            "seconds": None if s3 is None else round(s3, 3),
            "firings": n3,
            "trace": "firings+facts",
            "capped": capped,
        }
        if note:
            row["note"] = note
        rows.append(row)
    return rows


# --- gating -----------------------------------------------------------------------------------


def _gating_rows(evaluations: int, raw_evaluations: int, experta_seconds: float) -> list[dict]:
    import clips

    import rules
    from chaining import EngineConfig, ExpertaEngine, ForwardEngine
    from cli.benchmarks._rules_experta import GATING_FACT_TYPES, Gating
    from rules.facts import facts_from_json

    path = BENCH_KB / "gating.clp"
    inputs = [facts_from_json(gating_facts(i)) for i in range(1000)]
    window = min(10_000, evaluations // 4)
    rows = []
    # (trace, read-back): the first row is the full workload (200,000 evaluations); the others
    # show what the firing/fact trace and the read-back of all facts cost.
    default = _native_parts()
    variants = (
        ("firings", None, None),
        ("firings", ("decision", "gate"), None),
        ("firings+facts", None, None),
        ("none", ("decision", "gate"), None),
    )
    if default != "none":
        variants += (("firings", ("decision", "gate"), False),)
    for label, read, native in variants:
        config = EngineConfig(
            trace_firings=label != "none", trace_facts=label == "firings+facts", workers=1, native=native
        )
        engine = ForwardEngine.from_knowledge_base(rules.load_knowledge_base([path]), config=config)
        n = evaluations if (label, read, native) == variants[0] else max(window * 2, evaluations // 10)
        marks = _timed_loop(lambda i, e=engine, t=read: e.evaluate(inputs[i % 1000], templates=t), n, window)
        rows.append(
            {
                "program": "gating",
                "engine": "workbench",
                "evals_per_s": round(n / marks[2]),
                "evals_per_cpu_s": round(n / marks[3]),
                "evaluations": n,
                "first_10k_per_s": round(window / marks[0]),
                "last_10k_per_s": round(window / (marks[2] - marks[1])),
                "trace": label,
                "native": default if native is None else "none",
                "read_back": "all" if read is None else ",".join(read),
            }
        )
        engine.close()

    # raw clipspy, the loop: reset, Template.assert_fact per fact, run (no tracing)
    env = clips.Environment()
    env.load(str(path))
    templates = {t: env.find_template(t) for t in ("request", "prediction", "user", "limits", "clock")}
    raw_inputs = [
        [
            (
                templates[f["template"]],
                {k: (clips.Symbol(v) if isinstance(v, str) else v) for k, v in f["slots"].items()},
            )
            for f in gating_facts(i)
        ]
        for i in range(1000)
    ]
    w = min(window, raw_evaluations // 4)

    def raw_eval(i):
        env.reset()
        for tpl, slots in raw_inputs[i % 1000]:
            tpl.assert_fact(**slots)
        env.run()

    marks = _timed_loop(raw_eval, raw_evaluations, w)
    rows.append(
        {
            "program": "gating",
            "engine": "clips",
            "evals_per_s": round(raw_evaluations / marks[2]),
            "evals_per_cpu_s": round(raw_evaluations / marks[3]),
            "evaluations": raw_evaluations,
            "first_10k_per_s": round(w / marks[0]),
            "last_10k_per_s": round(w / (marks[2] - marks[1])),
            "trace": "none",
            "loop": "Template.assert_fact",
        }
    )

    # raw CLIPS through the fact builder, nothing retained, nothing read back: the floor of
    # "reset + 5 facts + run" from Python (no trace, no result).
    from clips._clips import lib
    from clips.common import environment_builder

    env2 = clips.Environment()
    env2.load(str(path))
    e2, fb, cv = env2._env, environment_builder(env2._env, "fact"), clips._clips.ffi.new("CLIPSValue *")
    fb_inputs = [
        [(f["template"].encode(), [(k.encode(), v) for k, v in f["slots"].items()]) for f in gating_facts(i)]
        for i in range(1000)
    ]

    def builder_eval(i):
        lib.Reset(e2)
        for tpl, slots in fb_inputs[i % 1000]:
            lib.FBSetDeftemplate(fb, tpl)
            for key, v in slots:
                t = type(v)
                cv.value = (
                    lib.CreateInteger(e2, v)
                    if t is int
                    else lib.CreateFloat(e2, v)
                    if t is float
                    else lib.CreateSymbol(e2, v.encode())
                )
                lib.FBPutSlot(fb, key, cv)
            lib.FBAssert(fb)
        lib.Run(e2, -1)

    n = max(window * 2, evaluations // 10)
    marks = _timed_loop(builder_eval, n, window)
    rows.append(
        {
            "program": "gating",
            "engine": "clips",
            "evals_per_s": round(n / marks[2]),
            "evals_per_cpu_s": round(n / marks[3]),
            "evaluations": n,
            "first_10k_per_s": round(window / marks[0]),
            "last_10k_per_s": round(window / (marks[2] - marks[1])),
            "trace": "none",
            "loop": "fact builder, no read-back",
        }
    )

    engine = ExpertaEngine(Gating, fact_types=GATING_FACT_TYPES)
    n = 0
    t0, c0 = time.perf_counter(), time.process_time()
    while time.perf_counter() - t0 < experta_seconds:
        engine.evaluate(inputs[n % 1000])
        n += 1
    rows.append(
        {
            "program": "gating",
            "engine": "experta",
            "evals_per_s": round(n / (time.perf_counter() - t0)),
            "evals_per_cpu_s": round(n / (time.process_time() - c0)),
            "evaluations": n,
            "first_10k_per_s": None,
            "last_10k_per_s": None,
            "trace": "firings+facts",
        }
    )
    return rows


def _published_rows(quick: bool, budget: _ExpertaBudget) -> list[dict]:
    """The OPS5 benchmark suite's programs on its published data sets (`_rules_published`):
    Manners 16/32/64/128 and Waltz 12/25/50 as CLIPS's examples distribute them, the facts
    asserted after reset as their `load-facts` does (no experta rows: its rule classes follow the
    programs above)."""
    from ._rules_published import manners_facts as published_manners
    from ._rules_published import waltz_facts as published_waltz

    rows = []
    for guests in (16,) if quick else (16, 32, 64, 128):
        rows += _program_rows(
            f"published-manners-{guests}",
            PUBLISHED_KB / "manners.clp",
            published_manners(guests),
            None,
            budget,
            5 if guests <= 64 else 3,
        )
    for regions in (2,) if quick else (12, 25, 50):
        rows += _program_rows(
            f"published-waltz-{regions}", PUBLISHED_KB / "waltz.clp", published_waltz(regions), None, budget, 5
        )
    return rows


def _front_end_rows(quick: bool) -> list[dict]:
    """Start-up and parse rows (`workbench kb check` start-up, parse + validate vs CLIPS's load):
    measured by the rule language's own benchmark module, `cli/benchmarks/_rules_frontend.py`, in a
    fresh process (`--json`): this one has imported numpy, whose OpenBLAS thread pool slowed
    CLIPS's `load` by ~40% on this machine (docs/benchmarks.md), which would flatter the ratio.

    Raises:
        RuntimeError: the measuring process failed (its stderr's end in the message).
    """
    import json
    import subprocess
    import sys

    cmd = [sys.executable, "-m", f"{__package__}._rules_frontend", "--json"] + (["--quick"] if quick else [])
    done = subprocess.run(cmd, cwd=Path(__file__).resolve().parents[2], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[1:])} failed ({done.returncode}): {done.stderr[-2000:]}")
    return json.loads(done.stdout)


def _native_parts() -> str:
    """The engine's C parts that are built (and so used by default): "trace+assert", "trace",
    "assert" or "none"."""
    from chaining.forward import native_facts, native_trace

    return (
        "+".join(name for name, part in (("trace", native_trace), ("assert", native_facts)) if part.AVAILABLE) or "none"
    )


def _goals(rows: list[dict]) -> dict:
    """The issue's goals, checked: ours (full trace) <= 1.3x raw CLIPS on each program, parse +
    validate <= 1.5x CLIPS's load, `kb check` start-up <= 3x `import clips, lark`, and
    gating >= 20,000 evaluations per CPU-second, flat (last 10,000 vs first 10,000)."""
    programs = {}
    for r in rows:
        if r["engine"] == "workbench" and r["program"] != "gating" and "trace" in r:  # not the parse/startup rows
            key = f"{r['trace']}, read_back={r['read_back']}, native={r['native']}"
            programs.setdefault(r["program"], {})[key] = {
                "vs_clips": r["vs_clips"],
                "vs_clips_run": r["vs_clips_run"],
                "met": r["vs_clips"] <= 1.3,
            }
    gating = {}
    for r in rows:
        if r["program"] == "gating" and r["engine"] == "workbench":
            gating[f"{r['trace']}, read_back={r['read_back']}, native={r['native']}"] = {
                "evals_per_cpu_s": r["evals_per_cpu_s"],
                "met": r["evals_per_cpu_s"] >= 20_000,
                "last_vs_first_10k": round(r["last_10k_per_s"] / r["first_10k_per_s"], 2),
            }
    front_end = {
        r["program"]: {"vs": r.get("vs_clips", r.get("vs_baseline")), "met": r.get("vs_clips", 0) <= 1.5}
        if r["program"].startswith("parse")
        else {"vs": r["vs_baseline"], "met": r["vs_baseline"] <= 3}
        for r in rows
        if r["engine"] == "workbench" and ("vs_baseline" in r or r["program"].startswith("parse"))
    }
    return {
        "front_end_goals": "parse + validate <= 1.5x CLIPS's load; kb check start-up <= 3x import clips, lark",
        "front_end": front_end,
        "workbench_vs_clips_goal": "<= 1.3x with tracing on",
        "programs": programs,
        "gating_goal": ">= 20,000 evals/s on one core, flat from the first 10,000 to the last",
        "gating": gating,
    }


def _timed_loop(fn, n: int, window: int) -> tuple[float, float, float, float]:
    """Run fn(i) for i < n; seconds elapsed at: end of the first window, start of the last
    window, end, and the CPU seconds of the whole loop."""
    first = last_start = 0.0
    t0, c0 = time.perf_counter(), time.process_time()
    for i in range(n):
        if i == n - window:
            last_start = time.perf_counter() - t0
        fn(i)
        if i + 1 == window:
            first = time.perf_counter() - t0
    total = time.perf_counter() - t0
    return first, last_start, total, time.process_time() - c0


# --- entry point ------------------------------------------------------------------------------


def run(quick: bool = False) -> list[dict]:
    """Run the benchmark; `quick=True` uses small sizes (a smoke run, not for reported numbers)."""
    from cli.benchmarks._rules_experta import MANNERS_FACT_TYPES, WALTZ_FACT_TYPES, Manners, Waltz

    EXTRA.clear()
    EXTRA["load_average_before"] = os.getloadavg()
    from chaining.forward import native_facts, native_trace

    EXTRA["native"] = {
        "default": _native_parts(),
        "trace": native_trace.UNAVAILABLE or "built",
        "assert": native_facts.UNAVAILABLE or "built",
    }
    budget = _ExpertaBudget(5.0 if quick else EXPERTA_CAP_S, 2.5 if quick else EXPERTA_RUN_CAP_S)
    rows: list[dict] = []
    for guests in (8, 16) if quick else (16, 32, 64, 128):
        rows += _program_rows(
            f"manners-{guests}",
            BENCH_KB / "manners.clp",
            manners_facts(guests),
            (Manners, MANNERS_FACT_TYPES),
            budget,
            5 if guests <= 64 else 3,
        )
    for cubes in (2,) if quick else (25, 100):
        rows += _program_rows(
            f"waltz-{cubes}", BENCH_KB / "waltz.clp", waltz_facts(cubes), (Waltz, WALTZ_FACT_TYPES), budget, 5
        )
    rows += _published_rows(quick, budget)
    rows += _gating_rows(2_000 if quick else 200_000, 1_000 if quick else 20_000, 1.0 if quick else 10.0)
    rows += _front_end_rows(quick)
    EXTRA["load_average_after"] = os.getloadavg()
    EXTRA["experta_cap_s"] = {"total": 5.0 if quick else EXPERTA_CAP_S, "per_run": 2.5 if quick else EXPERTA_RUN_CAP_S}
    EXTRA["goals"] = _goals(rows)
    return rows
