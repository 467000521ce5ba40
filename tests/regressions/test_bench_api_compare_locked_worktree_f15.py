"""f15: `workbench bench api_compare` stopped by SIGINT while `git worktree add` was still checking the
tree out (tests/regressions/test_bench_api_compare_signals_h5.py[2-False], CI on this machine) left the
worktree registered: the signal's exception made `subprocess.run` kill git half-way, git had locked the
tree it was adding ("initializing"), `git worktree remove --force` refuses a locked tree and
`git worktree prune` keeps locked entries. Now a signal during the add is held until git is done, and
the clean-up removes a locked tree too (--force twice). Deterministic, in a throw-away repository (the
module's REPO pointed at it): a locked tree stands for a cut-short add; the signal is sent by the
process to itself just before git starts."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

from cli.benchmarks import api_compare


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout


def _repo(tmp_path: Path) -> tuple[Path, Path]:
    repo, tmp = tmp_path / "repo", tmp_path / "bench-api-compare-x"
    repo.mkdir()
    tmp.mkdir()
    _git(repo, "init", "-q")
    (repo / "a.txt").write_text("a\n")
    _git(repo, "add", "a.txt")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "a")
    return repo, tmp


def _listed(repo: Path) -> list[str]:
    out = _git(repo, "worktree", "list", "--porcelain").splitlines()
    return [line.split(" ", 1)[1] for line in out if line.startswith("worktree ")]


def test_a_worktree_locked_by_a_cut_short_add_is_removed(tmp_path, monkeypatch):
    repo, tmp = _repo(tmp_path)
    tree = tmp / "tree-0"
    _git(repo, "worktree", "add", "-q", "--detach", str(tree), "HEAD")
    _git(repo, "worktree", "lock", "--reason", "initializing", str(tree))  # as git leaves it when killed mid-add
    monkeypatch.setattr(api_compare, "REPO", repo)

    api_compare._clean_up([], tmp)

    assert _listed(repo) == [str(repo)]
    assert not tmp.exists()


def test_a_signal_during_the_add_is_raised_once_git_is_done(tmp_path, monkeypatch):
    repo, tmp = _repo(tmp_path)
    monkeypatch.setattr(api_compare, "REPO", repo)
    real_git = api_compare._git

    def git_after_a_signal(*args, **kwargs):
        if args[:2] == ("worktree", "add"):
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C just as git starts
        return real_git(*args, **kwargs)

    monkeypatch.setattr(api_compare, "_git", git_after_a_signal)
    state: dict = {"cleaning": False}
    with pytest.raises(api_compare.Interrupted) as got, api_compare._signals_interrupt(state):
        api_compare._prepare("HEAD", 0, tmp, state)
    assert got.value.signum == signal.SIGINT
    porcelain = _git(repo, "worktree", "list", "--porcelain")
    assert str(tmp / "tree-0") in porcelain and "locked" not in porcelain  # git finished the add
    assert (tmp / "tree-0" / "a.txt").read_text() == "a\n"
    api_compare._clean_up([], tmp)
    assert _listed(repo) == [str(repo)] and not tmp.exists()
