"""CPU seconds per process over a stretch of load, for `workbench bench api --ray`: where the cores go.

`snapshot(root)` reads `utime + stime` (user and system CPU, all threads) from `/proc/PID/stat` of
`root` and every process below it (a local Ray instance started by `ray.init` is a tree below the
driver: GCS, raylet, the Serve controller, the HTTP proxy or HAProxy with its manager, every replica), and
names each process by its role from its command line (Ray sets worker titles such as `ray::ServeReplica:r1:pipelines`).
`diff(before, after)` gives CPU seconds per role over the stretch; divided by the requests answered
in it, CPU milliseconds per request. Linux only (returns {} where there is no /proc).
"""

from __future__ import annotations

import os
from pathlib import Path

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _stat(pid: int) -> tuple[int, float] | None:
    """(parent pid, CPU seconds) of `pid`, None if it is gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    rest = raw[raw.rindex(")") + 2 :].split()  # fields after "(comm)": state is rest[0]
    return int(rest[1]), (int(rest[11]) + int(rest[12])) / _TICK


def _role(pid: int, root: int) -> str:
    """A readable role of a process: `client` for `root`, Ray's own processes by name, replicas by
    application and deployment (`replica r1/pipelines`), anything else by its command."""
    if pid == root:
        return "client (this process: load generator + Ray driver)"
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return "gone"
    if "ServeReplica:" in cmd:
        app_dep = cmd.split("ServeReplica:", 1)[1].split()[0]
        app, _, dep = app_dep.partition(":")
        return f"replica {app}/{dep.split('.')[0]}"
    exe = cmd.split()[0] if cmd else ""
    if exe.rsplit("/", 1)[-1] == "haproxy":  # the HAProxy ingress (RAY_SERVE_ENABLE_HA_PROXY): a C process
        return "HAProxy"
    for key, name in (
        ("HAProxyManager", "Serve HAProxy manager"),
        ("ProxyActor", "Serve HTTP proxy"),
        ("ServeController", "Serve controller"),
        ("gcs_server", "GCS"),
        ("raylet", "raylet"),
        ("dashboard_agent", "Ray agents"),
        ("runtime_env_agent", "Ray agents"),
        ("log_monitor", "Ray agents"),
        ("monitor.py", "Ray agents"),
        ("ray::IDLE", "Ray idle workers"),
        ("cli.benchmarks.api", "single-process server"),
    ):
        if key in cmd:
            return name
    return cmd.split()[0] if cmd else "?"


def snapshot(root: int | None = None) -> dict[int, tuple[str, float]]:
    """`{pid: (role, CPU seconds so far)}` of `root` (default: this process) and its descendants."""
    root = os.getpid() if root is None else root
    if not Path("/proc").is_dir():
        return {}
    parents: dict[int, int] = {}
    cpu: dict[int, float] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            st = _stat(int(entry.name))
            if st is not None:
                parents[int(entry.name)], cpu[int(entry.name)] = st
    out = {}
    for pid in cpu:
        p = pid
        while p > 1 and p != root:
            p = parents.get(p, 0)
        if p == root:
            out[pid] = (_role(pid, root), cpu[pid])
    return out


def diff(before: dict[int, tuple[str, float]], after: dict[int, tuple[str, float]]) -> dict[str, float]:
    """CPU seconds per role spent between two snapshots (processes started in between count from 0;
    replicas of one deployment are numbered by pid order: `replica r2/pipelines #1`, `#2`)."""
    per_pid = {pid: (role, sec - (before[pid][1] if pid in before else 0.0)) for pid, (role, sec) in after.items()}
    counts: dict[str, int] = {}
    for _pid, (role, _) in sorted(per_pid.items()):
        counts[role] = counts.get(role, 0) + 1
    out: dict[str, float] = {}
    seen: dict[str, int] = {}
    for _pid, (role, sec) in sorted(per_pid.items()):
        name = role
        if role.startswith("replica ") and counts[role] > 1:
            seen[role] = seen.get(role, 0) + 1
            name = f"{role} #{seen[role]}"
        out[name] = round(out.get(name, 0.0) + sec, 3)
    return out
