"""`workbench bench backward`: the backward prover against SWI-Prolog (tabled) on the same programs.

Cases (issue 18), generated into a temporary folder as a rule file and an equivalent Prolog file:
    chain-right-N   a chain n0 -> ... -> n(N-1), `path` right-recursive, ground goal (path n0 nN-1)
    chain-left-N    the same chain, `path` left-recursive, every answer of (path n0 ?y)
                    (N = 1,000 and 10,000)
    cyclic-2000     reachability (right-recursive, as knowledge_bases/graph_reach.clp) over a
                    strongly connected graph of 500 nodes and 2,000 edges (a ring plus 1,500
                    random chords, seed 7); every answer of (reach n0 ?y)
    cross-100000    (p ?x ?y) <= (a ?x) (b ?y) over 100 x 1,000 facts: 100,000 answers
Each engine runs in its own process, whole-process wall time, CPU time (user + system) and peak
resident memory measured (GNU time's %M, else os.wait4's ru_maxrss), after one untimed warm-up
run of each (bytecode caches written, files cached): ours is `python cli/benchmarks/_backward_child.py`
(imports, parse, prove, answers made and counted, nothing printed per answer, no proofs kept:
what `kb ask --json` does without --proofs) and reports from inside its prove time and the time
to its first answer; SWI-Prolog is `swipl` with `:- table path/2.` (or reach/2) counting
answers with aggregate_all/3 (the cross product's p/2 is not recursive and runs untabled, plain
SLD: tabling it makes SWI's run 2-3x slower, so the stricter reference is kept). Each case runs
ROUNDS times, the two engines in turn (SWI, ours, SWI, ours, ...), so both see the same load;
`wall_s`, `cpu_s` and the inside times are the best of the rounds (the run least disturbed by
other work on a shared machine), `wall_median_s` the median, `walls_s` every round's. A row for
SWI-Prolog says "skipped" where `swipl` is not installed.

Rows: {"case", "engine": "workbench"|"swipl", "answers", "wall_s", "wall_median_s", "walls_s",
       "cpu_s", "peak_mb", "prove_s", "first_answer_s", "load_s", "vs_swipl_wall",
       "vs_swipl_wall_median", "vs_swipl_cpu", "vs_swipl_mem", "rounds", "status"}
Goals (issue 18): every case within 10x of SWI-Prolog's time and 4x of its memory; time linear in
the chain length; first answer of the 100,000-answer query within 0.1 s of the proof's start.
The load average (the machine may be shared) is in EXTRA, before and after.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

EXTRA: dict[str, Any] = {}
TIMEOUT_S = 600.0
ROUNDS = 5  # runs of each engine per case, interleaved (1 with --quick)


# ---- programs --------------------------------------------------------------------------------


def _chain(n: int, left: bool) -> tuple[str, str, str, str]:
    edges = [(f"n{i}", f"n{i + 1}") for i in range(n - 1)]
    clp = "(deffacts g\n" + "\n".join(f"  (edge {a} {b})" for a, b in edges) + ")\n"
    clp += "(defrule p-edge (edge ?x ?y) => (assert (path ?x ?y)))\n"
    pl = ":- table path/2.\n" + "".join(f"edge({a},{b}).\n" for a, b in edges)
    pl += "path(X,Y) :- edge(X,Y).\n"
    if left:
        clp += "(defrule p-step (path ?x ?z) (edge ?z ?y) => (assert (path ?x ?y)))\n"
        pl += "path(X,Y) :- path(X,Z), edge(Z,Y).\n"
        return clp, pl, "(path n0 ?y)", "path(n0,_)"
    clp += "(defrule p-step (edge ?x ?z) (path ?z ?y) => (assert (path ?x ?y)))\n"
    pl += "path(X,Y) :- edge(X,Z), path(Z,Y).\n"
    return clp, pl, f"(path n0 n{n - 1})", f"path(n0,n{n - 1})"


def _cyclic(nodes: int, edges: int, seed: int = 7) -> tuple[str, str, str, str]:
    rng = random.Random(seed)
    es = {(i, (i + 1) % nodes) for i in range(nodes)}
    while len(es) < edges:
        a, b = rng.randrange(nodes), rng.randrange(nodes)
        es.add((a, b))
    es_sorted = sorted(es)
    clp = "(deffacts g\n" + "\n".join(f"  (edge n{a} n{b})" for a, b in es_sorted) + ")\n"
    clp += "(defrule reach-edge (edge ?x ?y) => (assert (reach ?x ?y)))\n"
    clp += "(defrule reach-transitive (edge ?x ?z) (reach ?z ?y) => (assert (reach ?x ?y)))\n"
    pl = ":- table reach/2.\n" + "".join(f"edge(n{a},n{b}).\n" for a, b in es_sorted)
    pl += "reach(X,Y) :- edge(X,Y).\nreach(X,Y) :- edge(X,Z), reach(Z,Y).\n"
    return clp, pl, "(reach n0 ?y)", "reach(n0,_)"


def _cross(na: int, nb: int) -> tuple[str, str, str, str]:
    clp = "(deffacts d\n" + "\n".join(f"  (a x{i})" for i in range(na))
    clp += "\n" + "\n".join(f"  (b y{i})" for i in range(nb)) + ")\n"
    clp += "(defrule p (a ?x) (b ?y) => (assert (p ?x ?y)))\n"
    pl = "".join(f"a(x{i}).\n" for i in range(na)) + "".join(f"b(y{i}).\n" for i in range(nb))
    pl += "p(X,Y) :- a(X), b(Y).\n"
    return clp, pl, "(p ?x ?y)", "p(_,_)"


def cases(quick: bool) -> list[tuple[str, tuple[str, str, str, str]]]:
    sizes = [1000] if quick else [1000, 10000]
    out = []
    for n in sizes:
        out.append((f"chain-right-{n}", _chain(n, left=False)))
        out.append((f"chain-left-{n}", _chain(n, left=True)))
    out.append(("cyclic-2000", _cyclic(500, 2000) if not quick else _cyclic(200, 400)))
    out.append(("cross-100000", _cross(100, 1000) if not quick else _cross(100, 100)))
    return out


# ---- measuring -------------------------------------------------------------------------------


def _measure(cmd: list[str], cwd: Path) -> tuple[float, float, float, int, str, str]:
    """Run `cmd`; (wall seconds, CPU seconds (user + system, the command's and its waited-for
    children's: os.wait4), peak RSS MB of that process, exit status, stdout, stderr).

    The peak comes from GNU time (`%M`) when it is installed: Linux counts a child's memory from
    before its exec, so `wait4`'s ru_maxrss of a child forked from this process is never below this
    process's own size (about 55 MB: every engine would seem to need at least that). Without GNU
    time it is that ru_maxrss, and `EXTRA["peak_note"]` says so."""
    out_f = tempfile.TemporaryFile(dir=cwd)
    err_f = tempfile.TemporaryFile(dir=cwd)
    peak_file = None
    if os.access(TIME, os.X_OK):
        peak_file = tempfile.NamedTemporaryFile(dir=cwd, suffix=".peak", delete=False)
        peak_file.close()
        cmd = [TIME, "-f", "%M", "-o", peak_file.name, *cmd]
    else:
        EXTRA["peak_note"] = "GNU time not installed: peak_mb includes the benchmark process's own size"
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=out_f, stderr=err_f, env=_child_env())
    deadline = t0 + TIMEOUT_S
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.perf_counter() > deadline:
            proc.kill()
            pid, status, usage = os.wait4(proc.pid, 0)
            status = -9
            break
        time.sleep(0.002)
    wall = time.perf_counter() - t0
    proc.returncode = 0  # reaped by wait4
    out_f.seek(0)
    err_f.seek(0)
    code = os.waitstatus_to_exitcode(status) if status != -9 else -9
    cpu = usage.ru_utime + usage.ru_stime
    peak = usage.ru_maxrss / 1024.0
    if peak_file is not None:
        text = Path(peak_file.name).read_text().strip().splitlines()
        os.unlink(peak_file.name)
        if text and text[-1].isdigit():
            peak = int(text[-1]) / 1024.0
    return wall, cpu, peak, code, out_f.read().decode(), err_f.read().decode()


CHILD = Path(__file__).with_name("_backward_child.py")
_LOAD_CHILD = (
    "import importlib.util as u, sys\n"
    "s = u.spec_from_file_location('backward_child', sys.argv[1])\n"
    "m = u.module_from_spec(s)\n"
    "s.loader.exec_module(m)\n"
    "m._child(sys.argv[2], sys.argv[3])\n"
)
TIME = "/usr/bin/time"  # GNU time: the peak memory of the command alone (see _measure)


def _child_env() -> dict[str, str]:
    """The children's environment: bytecode caches written and read, as in any installed Python (a
    sandbox that sets PYTHONDONTWRITEBYTECODE would make every run compile ~300 modules again)."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def _ours(clp: Path, goal: str) -> dict[str, Any]:
    # loaded from its file, not `-m cli...`: importing the `cli` package would load the typer app,
    # which `workbench kb ask` itself skips (cli.kb_ask_run.fast_main)
    cmd = [sys.executable, "-c", _LOAD_CHILD, str(CHILD), str(clp), goal]
    wall, cpu, peak, code, out, err = _measure(cmd, Path(__file__).resolve().parents[2])
    row: dict[str, Any] = {"engine": "workbench", "wall_s": wall, "cpu_s": cpu, "peak_mb": peak}
    if code != 0:
        return {**row, "status": f"failed ({code}): {err.strip().splitlines()[-1] if err.strip() else ''}"}
    doc = json.loads(out.strip().splitlines()[-1])
    return {**row, **doc, "status": "ok"}


def _swipl(pl: Path, goal: str) -> dict[str, Any]:
    exe = shutil.which("swipl")
    if exe is None:
        return {"engine": "swipl", "status": "skipped (swipl not installed: apt-get install swi-prolog-nox)"}
    main = f"main :- aggregate_all(count, {goal}, C), format('~w~n', [C])."
    if main not in pl.read_text():
        pl.write_text(pl.read_text() + main + "\n")
    wall, cpu, peak, code, out, err = _measure([exe, "-q", "-g", "main", "-t", "halt", str(pl)], pl.parent)
    row: dict[str, Any] = {"engine": "swipl", "wall_s": wall, "cpu_s": cpu, "peak_mb": peak}
    if code != 0:
        return {**row, "status": f"failed ({code}): {err.strip()[-200:]}"}
    return {**row, "answers": int(out.strip().splitlines()[-1]), "status": "ok"}


def run(quick: bool = False) -> list[dict[str, Any]]:
    EXTRA["loadavg_before"] = os.getloadavg()
    EXTRA["bytecode"] = "cached: one untimed warm-up run of each engine first; PYTHONDONTWRITEBYTECODE unset"
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-backward-") as tmp:
        folder = Path(tmp)
        warm_clp, warm_pl = folder / "warm.clp", folder / "warm.pl"
        clp_text, pl_text, goal, pl_goal = _chain(10, left=False)
        warm_clp.write_text(clp_text)
        warm_pl.write_text(pl_text)
        _ours(warm_clp, goal)  # writes the bytecode caches and warms the file cache; not measured
        _swipl(warm_pl, pl_goal)
        rounds = 1 if quick else ROUNDS
        EXTRA["rounds"] = f"{rounds} per case, SWI-Prolog and ours in turn; best and median of the rounds"
        for name, (clp_text, pl_text, goal, pl_goal) in cases(quick):
            clp, pl = folder / f"{name}.clp", folder / f"{name}.pl"
            clp.write_text(clp_text)
            pl.write_text(pl_text)
            swi_runs, our_runs = [], []
            for _ in range(rounds):
                swi_runs.append(_swipl(pl, pl_goal))
                our_runs.append(_ours(clp, goal))
            swi, ours = _combine(swi_runs), _combine(our_runs)
            if swi.get("status") == "ok" and ours.get("status") == "ok":
                ours["vs_swipl_wall"] = round(ours["wall_s"] / swi["wall_s"], 2)
                ours["vs_swipl_wall_median"] = round(ours["wall_median_s"] / swi["wall_median_s"], 2)
                ours["vs_swipl_cpu"] = round(ours["cpu_s"] / max(swi["cpu_s"], 1e-3), 2)
                ours["vs_swipl_mem"] = round(ours["peak_mb"] / swi["peak_mb"], 2)
                if ours.get("answers") != swi.get("answers"):
                    ours["status"] = f"answers differ: {ours.get('answers')} vs swipl {swi.get('answers')}"
            rows.append({"case": name, **ours})
            rows.append({"case": name, **swi})
    EXTRA["loadavg_after"] = os.getloadavg()
    return rows


def _combine(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One row from an engine's rounds of a case: best (least) wall, CPU and inside times, median
    wall, every wall, the largest peak; the first failure's row when a round failed."""
    bad = [r for r in runs if r.get("status") != "ok"]
    if bad:
        return bad[0]
    walls = sorted(r["wall_s"] for r in runs)
    out = dict(runs[0])
    out["wall_s"] = round(walls[0], 3)
    out["wall_median_s"] = round(statistics.median(walls), 3)
    out["walls_s"] = [round(r["wall_s"], 3) for r in runs]
    out["cpu_s"] = round(min(r["cpu_s"] for r in runs), 3)
    out["peak_mb"] = round(max(r["peak_mb"] for r in runs), 1)
    for k in ("prove_s", "load_s", "first_answer_s"):
        vals = [r[k] for r in runs if r.get(k) is not None]
        if vals:
            out[k] = min(vals)
    out["rounds"] = len(runs)
    return out
