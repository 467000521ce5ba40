"""Rows of `workbench bench rules` about reading rule files: `parse` and `startup`.

parse: parse + validate (`rules.knowledge_base_from_sources`, what `kb check` and every engine
    do before CLIPS sees a file) against CLIPS's own `load` of the same files (clipspy
    `Environment.load`, a fresh environment per round, creation not timed), for the data-heavy
    programs: Waltz 50 (knowledge_bases/bench/waltz.clp + a deffacts of 50 regions of line
    drawings, 72 segments each, every segment as a `line` fact both ways: 7,200 template facts)
    and Manners 128 (knowledge_bases/bench/manners.clp + a deffacts of 128 guests with 2-3
    hobbies each and the last seat, as the published generator writes them). Interleaved
    rounds (PARSE_ROUNDS: one round of both is ~1 ms for Manners, ~10 ms for Waltz, so more rounds
    cost little and steady the median on a shared machine), median seconds, `vs_clips` = ours /
    CLIPS. Goal <= 1.5. `native`: the C readers used ("read+scan": rule text and data deffacts;
    "scan": data only; "none": the grammar and regular expressions alone).
startup: wall-clock seconds of a fresh process running `workbench kb check FILE` (module
    entry `python -m cli`, the console script's code path) against `python -c "import clips,
    lark"`, interleaved, median of ROUNDS. Goal: vs_baseline <= 3.

Rows: {"program", "engine": "workbench"|"clips"|"python", "seconds", "vs_clips"|"vs_baseline",
"facts"|"command", "rounds"} (+ "native" on parse rows). The load average is in each row
(`load_average`), since the machine may be shared.

`python -m cli.benchmarks._rules_frontend [--quick] [--out FILE.json]` prints these rows alone
(and writes them as `workbench bench` does).
"""

from __future__ import annotations

import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BENCH_KB = ROOT / "knowledge_bases" / "bench"
ROUNDS = 7
PARSE_ROUNDS = 21


def waltz_data(regions: int = 50) -> str:
    """A deffacts of `regions` line drawings (72 segments each, both directions) as `line` facts."""
    out = ["(deffacts scene"]
    for r in range(regions):
        base = r * 1000
        points = [base + i for i in range(48)]
        segments = [(points[i], points[(i + 1) % 48]) for i in range(48)]
        segments += [(points[i], points[(i + 12) % 48]) for i in range(0, 48, 2)]
        for a, b in segments:
            out.append(f"   (line (from {a}) (to {b}))")
            out.append(f"   (line (from {b}) (to {a}))")
    out.append(")")
    return "\n".join(out) + "\n"


def manners_data(guests: int = 128, hobbies: int = 3, seed: int = 1) -> str:
    """A deffacts of Miss Manners guests: sexes alternate, each guest 2-3 hobbies, then the last seat."""
    rng = random.Random(seed)
    out = ["(deffacts guests"]
    for i in range(guests):
        sex = "mf"[i % 2]
        for h in sorted(rng.sample(range(1, hobbies + 1), rng.randint(2, 3))):
            out.append(f"   (guest (name n{i + 1}) (sex {sex}) (hobby h{h}))")
    out.append(f"   (last-seat (seat {guests})))")
    return "\n".join(out) + "\n"


def _programs() -> list[tuple[str, Path, str]]:
    return [
        ("waltz-50", BENCH_KB / "waltz.clp", waltz_data(50)),
        ("manners-128", BENCH_KB / "manners.clp", manners_data(128)),
    ]


def _ours(sources: list[tuple[str, str]]) -> float:
    import rules

    t = time.perf_counter()
    rules.knowledge_base_from_sources("bench", sources)
    return time.perf_counter() - t


def _clips(paths: list[Path]) -> float:
    import clips

    env = clips.Environment()
    t = time.perf_counter()
    for p in paths:
        env.load(str(p))
    return time.perf_counter() - t


def _native() -> str:
    """The rule language's C readers that are built (and so used): "read+scan", "read", "scan" or "none"."""
    from rules import native_read, native_scan

    parts = (("read", native_read), ("scan", native_scan))
    return "+".join(name for name, part in parts if part.AVAILABLE) or "none"


def parse_rows(rounds: int = PARSE_ROUNDS) -> list[dict]:
    """parse + validate vs CLIPS's load, per data-heavy program."""
    rows = []
    native = _native()
    with tempfile.TemporaryDirectory() as tmp:
        for name, program, data in _programs():
            data_path = Path(tmp) / f"{name}-data.clp"
            data_path.write_text(data)
            sources = [(str(program), program.read_text()), (str(data_path), data)]
            _ours(sources), _clips([program, data_path])  # warm-up: grammar tables, imports
            ours, theirs = [], []
            for _ in range(rounds):
                ours.append(_ours(sources))
                theirs.append(_clips([program, data_path]))
            facts = data.count("\n") - 1
            mine, ref = statistics.median(ours), statistics.median(theirs)
            load = round(os.getloadavg()[0], 2)
            rows.append(
                {
                    "program": f"parse {name}",
                    "engine": "workbench",
                    "seconds": round(mine, 5),
                    "vs_clips": round(mine / ref, 2),
                    "facts": facts,
                    "rounds": rounds,
                    "load_average": load,
                    "native": native,
                }
            )
            rows.append(
                {
                    "program": f"parse {name}",
                    "engine": "clips",
                    "seconds": round(ref, 5),
                    "facts": facts,
                    "rounds": rounds,
                    "load_average": load,
                }
            )
    return rows


def _wall(cmd: list[str]) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - t


def startup_rows(rounds: int = ROUNDS) -> list[dict]:
    """A fresh `workbench kb check FILE` against a fresh `python -c "import clips, lark"`."""
    check = [sys.executable, "-m", "cli", "kb", "check", str(BENCH_KB / "manners.clp")]
    base = [sys.executable, "-c", "import clips, lark"]
    _wall(check), _wall(base)  # warm the file cache
    ours, theirs = [], []
    for _ in range(rounds):
        ours.append(_wall(check))
        theirs.append(_wall(base))
    mine, ref = statistics.median(ours), statistics.median(theirs)
    load = round(os.getloadavg()[0], 2)
    return [
        {
            "program": "startup",
            "engine": "workbench",
            "command": "workbench kb check manners.clp",
            "seconds": round(mine, 4),
            "vs_baseline": round(mine / ref, 2),
            "rounds": rounds,
            "load_average": load,
        },
        {
            "program": "startup",
            "engine": "python",
            "command": 'python -c "import clips, lark"',
            "seconds": round(ref, 4),
            "rounds": rounds,
            "load_average": load,
        },
    ]


def rows(quick: bool = False) -> list[dict]:
    """The `parse` and `startup` rows (`quick`: 3 rounds)."""
    return parse_rows(3 if quick else PARSE_ROUNDS) + startup_rows(3 if quick else ROUNDS)


def main(argv: list[str] | None = None) -> int:
    """`python -m cli.benchmarks._rules_frontend [--quick] [--out FILE.json | --json]`.

    Measures before importing the report's modules: numpy's OpenBLAS thread pool, once started,
    slowed CLIPS's `load` by ~40% here (0.51 -> 0.70 ms for Manners 128), which would flatter
    the ratio. `--json`: the rows as a JSON list on stdout, nothing else (for `bench rules`)."""
    import argparse
    import json

    parser = argparse.ArgumentParser(prog="python -m cli.benchmarks._rules_frontend")
    parser.add_argument("--quick", action="store_true", help="3 rounds (a smoke run, not for reported numbers)")
    parser.add_argument("--out", type=Path, help="write the rows as JSON (as `workbench bench ... --out`)")
    parser.add_argument("--json", action="store_true", help="print the rows as a JSON list only")
    args = parser.parse_args(argv)
    if args.out is not None:
        from cli.outputs import file_problem

        if problem := file_problem(args.out, "JSON file"):
            parser.error(f"--out {args.out}: {problem}")
    found = rows(args.quick)
    if args.json:
        print(json.dumps(found))
        return 0
    from .report import print_rows, write_json

    print_rows("rules-frontend", found)
    if args.out is not None:
        write_json("rules-frontend", found, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
