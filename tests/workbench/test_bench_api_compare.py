"""`workbench bench api_compare`: two git revisions' bench servers driven side by side (real
worktrees, real uvicorn servers, the real client), and the worktrees gone afterwards."""

from __future__ import annotations

import subprocess

import pytest

from cli.benchmarks import api_compare


def _worktrees() -> list[str]:
    out = subprocess.run(
        ["git", "worktree", "list", "--porcelain"], cwd=api_compare.REPO, capture_output=True, text=True
    )
    return sorted(line for line in out.stdout.splitlines() if line.startswith("worktree "))


def _commit(rev: str) -> str:
    return subprocess.run(
        ["git", "rev-parse", f"{rev}^{{commit}}"], cwd=api_compare.REPO, capture_output=True, text=True, check=True
    ).stdout.strip()


@pytest.mark.slow
def test_two_revisions_give_one_row_per_revision_and_level_and_leave_no_worktree():
    if subprocess.run(["git", "rev-parse", "--verify", "--quiet", "HEAD~1"], cwd=api_compare.REPO).returncode:
        pytest.skip("the checkout has no parent commit (shallow clone)")
    before = _worktrees()
    rows = api_compare.run(quick=True, revs=["HEAD~1", "HEAD"], concurrency=(1, 8))
    assert _worktrees() == before
    assert [(r["rev"], r["concurrency"]) for r in rows] == [("HEAD~1", 1), ("HEAD", 1), ("HEAD~1", 8), ("HEAD", 8)]
    for r in rows:
        assert r["commit"] == _commit(r["rev"])[:12]
        assert r["errors"] == 0 and r["rounds"] == 2
        assert r["rps"] > 0 and r["p50_ms"] > 0 and r["p99_ms"] >= r["p50_ms"]
        assert 0.05 < r["cpu_ms_per_request"] < 1000
    assert [r["cpu_vs_first"] for r in rows if r["rev"] == "HEAD~1"] == [1.0, 1.0]
    trees = api_compare.EXTRA["trees"]
    assert [t["commit"] for t in trees] == [_commit("HEAD~1"), _commit("HEAD")]
    for t in trees:  # each server ran its own tree's code: its C parts were mapped from its worktree
        assert t["native_parts"] == "built; loaded from the tree: True", t
    assert len(api_compare.EXTRA["rounds"]["HEAD c=8"]) == 2


def test_a_revision_git_cannot_resolve_is_named_and_no_worktree_is_left():
    before = _worktrees()
    with pytest.raises(api_compare.CompareError, match="revision 'no-such-rev-c3'"):
        api_compare.run(quick=True, revs=["HEAD", "no-such-rev-c3"])
    assert _worktrees() == before
