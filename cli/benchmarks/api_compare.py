"""`workbench bench api_compare REV [REV ...]`: the `workbench` server of several git revisions side
by side (A/B), the same client, interleaved rounds, CPU per request.

For each revision the benchmark checks the tree out into a temporary worktree (`git worktree add
--detach`), builds the rule engine's C parts there (`python -m chaining.forward.native_build`, as
`scripts/bootstrap.sh` does), and starts that tree's own bench server (`python -m cli.benchmarks.api
PORT`: the real app, `demo_digits` through `create_app`) with this checkout's `.venv` (the
interpreter running the benchmark; the tree's modules come first on `sys.path`) and a fresh SQLite
store each. `.` stands for this checkout as it is, uncommitted changes included (no worktree).

All servers run at once; each concurrency level (1 and 64) runs `ROUNDS` rounds and each round
drives every server in turn, the order reversed every other round, so a change in the shared
machine's load hits every revision alike. Per round: rps, p50 / p99 latency and the server
process's CPU time per answer (user + system, all threads, from `/proc`): on a shared machine
the CPU per request is the figure to compare, the rps and latency move with the load.

Rows (one per revision and concurrency, medians over the rounds): `{"rev", "commit",
"concurrency", "rps", "p50_ms", "p99_ms", "cpu_ms_per_request", "cpu_vs_first", "errors",
"rounds"}`; `cpu_vs_first` is the ratio to the first revision's CPU per request at that level.
`EXTRA` keeps every round's values and the load average before and after it. The worktrees are
removed when the run ends, whatever happened: SIGTERM (a timeout, a CI cancel, `kill`) and SIGINT
(Ctrl-C) during the run raise `Interrupted`, so the servers are stopped, every worktree made under
the run's temporary folder is removed (`git worktree remove --force --force`, locked ones too, then
`prune`) and the folder deleted before the command exits with 128 + the signal's number (143, 130).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import api
from .report import percentile_ms

EXTRA: dict[str, Any] = {}
CONCURRENCY = (1, 64)
ROUNDS = 6
SECONDS = 4.0  # per server, per round (after a 1 s warm-up of the same level)
DEFAULT_REVS = ("HEAD~1", "HEAD")
REPO = Path(__file__).resolve().parents[2]


class CompareError(RuntimeError):
    """A revision that git cannot resolve, a worktree that cannot be made, or a server that did not start."""


class Interrupted(KeyboardInterrupt):
    """SIGTERM or SIGINT arrived during `run` (raised from the signal handler, after which the run's
    clean-up still runs); `signum` is the signal's number, the command exits with 128 + it."""

    def __init__(self, signum: int):
        super().__init__(f"stopped by {signal.Signals(signum).name}")
        self.signum = signum


@contextlib.contextmanager
def _signals_interrupt(state: dict[str, Any]) -> Iterator[None]:
    """While the run is in this block, SIGTERM and SIGINT raise `Interrupted` (Python's default for
    SIGTERM ends the process at once and skips every `finally`). Once `state["cleaning"]` is set, a
    further signal is only noted: the clean-up is not cut short. Only the main thread can install
    handlers; elsewhere this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: object) -> None:
        if state.get("cleaning"):
            print(f"bench api_compare: {signal.Signals(signum).name}: removing worktrees first", file=sys.stderr)
            return
        if state.get("defer"):
            state["held"] = signum
            return
        raise Interrupted(signum)

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


@contextlib.contextmanager
def _signals_held(state: dict[str, Any]) -> Iterator[None]:
    """Inside `_signals_interrupt`, a SIGTERM / SIGINT arriving in this block is held and raised as
    `Interrupted` when the block ends. For `git worktree add`: raised while git runs, the exception
    made `subprocess.run` kill git half-way, which left the new tree locked ("initializing", so
    `git worktree remove --force` refused it) and git's own `reset --hard` child still writing into it
    while the clean-up removed the folder (CI on this machine, tests/regressions/
    test_bench_api_compare_signals_h5.py[2-False])."""
    state["defer"] = True
    try:
        yield
    finally:
        state["defer"] = False
        held = state.pop("held", None)
        if held is not None:
            raise Interrupted(held)  # also in place of git's own error when the signal reached git too


@dataclass
class _Tree:
    rev: str
    commit: str
    path: Path
    worktree: bool  # made by us (removed at the end)
    native: str = "not built"
    proc: subprocess.Popen | None = None
    log: Path | None = None
    url: str = ""
    rounds: dict[int, list[dict[str, float]]] = field(default_factory=dict)


def _git(*args: str, cwd: Path | None = None) -> str:
    out = subprocess.run(["git", *args], cwd=cwd or REPO, capture_output=True, text=True)
    if out.returncode != 0:
        raise CompareError(f"git {' '.join(args)}: {out.stderr.strip() or out.stdout.strip()}")
    return out.stdout.strip()


def resolve(rev: str) -> str:
    """The commit id (40 hex digits) of `rev` in this repository; `.` gives HEAD's (the checkout
    itself is used as it is). Raises CompareError naming the revision when git cannot resolve it."""
    try:
        return _git("rev-parse", "--verify", "--quiet", f"{'HEAD' if rev == '.' else rev}^{{commit}}")
    except CompareError:
        raise CompareError(f"revision {rev!r}: not a commit in {REPO}") from None


def _tree_env(tree: Path, db: Path) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(tree),  # the tree's modules before the .venv's editable install of this checkout
        "WORKBENCH_DATABASE_URL": f"sqlite:///{db}",
        "HF_HUB_OFFLINE": "1",
    }


def _prepare(rev: str, index: int, tmp: Path, state: dict[str, Any]) -> _Tree:
    commit = resolve(rev)
    if rev == ".":
        tree = _Tree(rev, commit, REPO, worktree=False)
    else:
        path = tmp / f"tree-{index}"
        with _signals_held(state):  # git is never killed half-way through adding the tree
            _git("worktree", "add", "--detach", str(path), commit)
        tree = _Tree(rev, commit, path, worktree=True)
    build = subprocess.run(
        [sys.executable, "-m", "chaining.forward.native_build", "--quiet"],
        cwd=tree.path,
        env=_tree_env(tree.path, tmp / "unused.sqlite3"),
        capture_output=True,
        text=True,
    )
    tree.native = "built" if build.returncode == 0 else f"fallback ({build.stderr.strip()[:200]})"
    return tree


def _start(tree: _Tree, index: int, tmp: Path) -> None:
    port = api._free_port()
    tree.url = f"http://127.0.0.1:{port}"
    tree.log = tmp / f"server-{index}.log"
    with open(tree.log, "wb") as log:
        tree.proc = subprocess.Popen(
            [sys.executable, "-m", "cli.benchmarks.api", str(port)],
            cwd=tree.path,
            env=_tree_env(tree.path, tmp / f"bench-{index}.sqlite3"),
            stdout=log,
            stderr=subprocess.STDOUT,
        )


def _round(tree: _Tree, requests: list[bytes], concurrency: int, seconds: float) -> dict[str, float]:
    from ._http_load import closed_loop

    assert tree.proc is not None
    asyncio.run(closed_loop(tree.url, requests, concurrency, min(1.0, seconds)))  # this level's warm-up
    load0 = os.getloadavg()[0]
    cpu0 = api._process_cpu_s(tree.proc.pid)
    samples, wall = asyncio.run(closed_loop(tree.url, requests, concurrency, seconds))
    cpu = api._process_cpu_s(tree.proc.pid) - cpu0
    ok = sorted(s.latency_s for s in samples if 200 <= s.status < 300)
    return {
        "rps": round(len(ok) / wall, 1),
        "p50_ms": percentile_ms(ok, 50),
        "p99_ms": percentile_ms(ok, 99),
        "cpu_ms_per_request": round(cpu / len(ok) * 1000, 3) if ok else float("nan"),
        "errors": len(samples) - len(ok),
        "error_statuses": dict(collections.Counter(s.status for s in samples if not 200 <= s.status < 300)),
        "load_1m": [round(load0, 2), round(os.getloadavg()[0], 2)],
    }


def run(
    quick: bool = False,
    revs: Sequence[str] = DEFAULT_REVS,
    concurrency: Sequence[int] = CONCURRENCY,
    rounds: int | None = None,
    seconds: float | None = None,
) -> list[dict[str, Any]]:
    """Check out each of `revs`, start its bench server, drive all of them in interleaved rounds at
    each level of `concurrency`; returns one row per revision and level (module docstring).
    `quick`: 2 rounds of 1 s (a smoke run, not for reported numbers).

    Raises CompareError for a revision git cannot resolve or a server that does not become ready
    within 300 s (its log is quoted), Interrupted on SIGTERM / SIGINT; worktrees, servers and the
    temporary folder are removed in every case."""
    if not revs:
        raise CompareError("no revision to compare (give one or more git revisions, '.' for this checkout)")
    rounds = rounds if rounds is not None else (2 if quick else ROUNDS)
    seconds = seconds if seconds is not None else (1.0 if quick else SECONDS)
    payloads = [{"input": x} for x in api._pipeline_inputs()]
    trees: list[_Tree] = []
    state: dict[str, Any] = {"cleaning": False}
    with _signals_interrupt(state):
        tmp = Path(tempfile.mkdtemp(prefix="bench-api-compare-"))
        try:
            return _run(trees, tmp, revs, concurrency, rounds, seconds, payloads, state)
        finally:
            state["cleaning"] = True
            _clean_up(trees, tmp)


def _run(
    trees: list[_Tree],
    tmp: Path,
    revs: Sequence[str],
    concurrency: Sequence[int],
    rounds: int,
    seconds: float,
    payloads: list[dict[str, Any]],
    state: dict[str, Any],
) -> list[dict[str, Any]]:
    for i, rev in enumerate(revs):
        trees.append(_prepare(rev, i, tmp, state))
    for i, tree in enumerate(trees):
        _start(tree, i, tmp)
    for tree in trees:
        assert tree.proc is not None and tree.log is not None
        api._wait_ready(tree.url, tree.proc, tree.log)
    from ._http_load import encode_requests

    for c in concurrency:
        for r in range(rounds):
            for tree in trees if r % 2 == 0 else trees[::-1]:
                requests = encode_requests(tree.url, "POST", api.PATHS["workbench"], payloads)
                tree.rounds.setdefault(c, []).append(_round(tree, requests, c, seconds))
    rows = _rows(trees, concurrency)
    for tree in trees:
        tree.native = f"{tree.native}; loaded from the tree: {_loads_from(tree)}"
    EXTRA.clear()
    EXTRA.update(
        {
            "trees": [{"rev": t.rev, "commit": t.commit, "native_parts": t.native} for t in trees],
            "rounds": {f"{t.rev} c={c}": t.rounds[c] for t in trees for c in concurrency},
            "seconds_per_server_per_round": seconds,
            "python": sys.executable,
            "cores": os.cpu_count(),
        }
    )
    return rows


def _loads_from(tree: _Tree) -> bool:
    """Whether the server process mapped the rule engine's C parts from its own tree (proof that it
    runs that tree's code, not this checkout's): its `/proc/PID/maps` names `TREE/chaining/forward/_native_*`."""
    assert tree.proc is not None
    try:
        maps = Path(f"/proc/{tree.proc.pid}/maps").read_text()
    except OSError:
        return False
    return f"{tree.path / 'chaining' / 'forward'}/_native_" in maps


def _rows(trees: list[_Tree], concurrency: Sequence[int]) -> list[dict[str, Any]]:
    rows = []
    for c in concurrency:
        first = None
        for tree in trees:
            rs = tree.rounds[c]
            cpu = statistics.median(x["cpu_ms_per_request"] for x in rs)
            first = cpu if first is None else first
            rows.append(
                {
                    "rev": tree.rev,
                    "commit": tree.commit[:12],
                    "concurrency": c,
                    "rps": round(statistics.median(x["rps"] for x in rs), 1),
                    "p50_ms": round(statistics.median(x["p50_ms"] for x in rs), 2),
                    "p99_ms": round(statistics.median(x["p99_ms"] for x in rs), 2),
                    "cpu_ms_per_request": round(cpu, 3),
                    "cpu_vs_first": round(cpu / first, 3) if first else float("nan"),
                    "errors": sum(x["errors"] for x in rs),
                    "rounds": len(rs),
                    "load_1m": round(statistics.median(x["load_1m"][0] for x in rs), 2),
                }
            )
    return rows


def _worktrees_under(tmp: Path) -> list[Path]:
    """Worktrees of this repository registered under `tmp` (one `git worktree add` may have been cut
    short by a signal before its tree was recorded)."""
    try:
        out = _git("worktree", "list", "--porcelain")
    except CompareError:
        return []
    root = tmp.resolve()
    paths = [Path(line[len("worktree ") :]) for line in out.splitlines() if line.startswith("worktree ")]
    return [p for p in paths if p.resolve() == root or root in p.resolve().parents]


def _clean_up(trees: list[_Tree], tmp: Path) -> None:
    """Stop the servers (SIGTERM, SIGKILL after 30 s), remove the worktrees made under `tmp`
    (`git worktree remove --force --force`: locked ones too), delete `tmp`, then `git worktree prune`.
    What cannot be removed is named on stderr, never silently left."""
    import shutil

    for tree in trees:
        if tree.proc is not None and tree.proc.poll() is None:
            tree.proc.terminate()
    for tree in trees:
        if tree.proc is not None:
            try:
                tree.proc.wait(30)
            except subprocess.TimeoutExpired:
                tree.proc.kill()
                tree.proc.wait(10)
    made = [t.path for t in trees if t.worktree]
    for path in made + [p for p in _worktrees_under(tmp) if p not in made]:
        try:
            # twice: a `worktree add` cut short by the signal leaves its tree locked ("initializing"), and
            # one --force refuses a locked tree (which `prune` then keeps registered as well)
            _git("worktree", "remove", "--force", "--force", str(path))
        except CompareError as exc:
            print(f"bench api_compare: {exc}", file=sys.stderr)

    def report(function: object, path: str, exc_info: object) -> None:
        print(f"bench api_compare: cannot remove {path}: {exc_info[1]}", file=sys.stderr)  # type: ignore[index]

    if tmp.exists():
        shutil.rmtree(tmp, onerror=report)
    try:
        _git("worktree", "prune")  # after the folder is gone: drops an entry whose tree could not be removed
    except CompareError as exc:
        print(f"bench api_compare: {exc}", file=sys.stderr)
