"""n11 #3 / #4: `workbench bench api_compare` stopped by SIGTERM (a timeout, a CI cancel, `kill`) left its
git worktrees registered in the user's repository (`git worktree list`, ~30 MB each in /tmp) and its
servers running: Python's default SIGTERM ends the process without running the `finally` that cleans
up. Now SIGTERM and SIGINT stop the servers, remove the worktrees and the temporary folder, and the
command exits with 143 / 130.

A real run of the command in a subprocess, against a throw-away clone of this repository (the
module's REPO pointed at it), its temporary folder in the test's own TMPDIR."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cli.benchmarks import api_compare

SCRIPT = """
import sys
from pathlib import Path
import cli.benchmarks.api_compare as m
m.REPO = Path(sys.argv[1])
from cli import main
sys.argv = ["workbench", "bench", "api_compare", "HEAD", "--quick", "--concurrency", "1", "--rounds", "1"]
main()
"""


def _worktrees(repo: Path) -> list[str]:
    out = subprocess.run(["git", "worktree", "list", "--porcelain"], cwd=repo, capture_output=True, text=True)
    return [line.split(" ", 1)[1] for line in out.stdout.splitlines() if line.startswith("worktree ")]


def _ours(tmp: Path) -> list[str]:
    """The command's temporary folders in `tmp` (torch's own caches there are not the command's)."""
    return sorted(p.name for p in tmp.iterdir() if p.name.startswith("bench-api-compare-"))


def _servers_under(folder: Path) -> list[int]:
    """Bench server processes (`python -m cli.benchmarks.api PORT`) whose working folder is under `folder`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cwd = os.readlink(entry / "cwd")
            cmd = (entry / "cmdline").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if cwd.startswith(str(folder)) and b"cli.benchmarks.api" in cmd and state != "Z":
            found.append(int(entry.name))
    return found


@pytest.mark.slow
@pytest.mark.parametrize(("sig", "wait_for_server"), [(signal.SIGTERM, True), (signal.SIGINT, False)])
def test_a_signal_removes_worktrees_servers_and_the_temporary_folder(tmp_path, sig, wait_for_server):
    clone, tmp = tmp_path / "clone", tmp_path / "tmp"
    tmp.mkdir()
    subprocess.run(["git", "clone", "-q", "--shared", str(api_compare.REPO), str(clone)], check=True)
    env = {**os.environ, "TMPDIR": str(tmp), "PYTHONPATH": str(api_compare.REPO)}
    log = tmp_path / "command.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-c", SCRIPT, str(clone)], cwd=api_compare.REPO, env=env, stdout=out, stderr=out
        )
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and proc.poll() is None:
            made = [w for w in _worktrees(clone) if w.startswith(str(tmp))]
            if made and (not wait_for_server or _servers_under(tmp)):
                break
            time.sleep(0.2)
        assert proc.poll() is None, log.read_text()
        assert made, "no worktree was made"
        servers = _servers_under(tmp)
        assert bool(servers) == wait_for_server
        proc.send_signal(sig)
        assert proc.wait(120) == 128 + sig, log.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert _worktrees(clone) == [str(clone)], log.read_text()
    assert _ours(tmp) == [], log.read_text()  # no bench-api-compare-* folder, no 30 MB tree
    assert _servers_under(tmp) == [] and not any(Path(f"/proc/{pid}").exists() for pid in servers)
    assert f"stopped by {sig.name}; servers and worktrees removed" in log.read_text()


@pytest.mark.slow
def test_a_completed_run_leaves_no_temporary_folder(tmp_path):
    """n11 #4: a completed run (here: this checkout `.` alone, no worktree) leaves nothing in TMPDIR."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp), "PYTHONPATH": str(api_compare.REPO)}
    argv = ["bench", "api_compare", ".", "--quick", "--concurrency", "1", "--rounds", "1"]
    done = subprocess.run(
        [sys.executable, "-c", "from cli import main; main()", *argv],
        cwd=api_compare.REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert _ours(tmp) == []
