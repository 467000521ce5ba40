"""Code health: no Python module of the project (tests excepted) is longer than 500 lines, so that each
can be read in one sitting (one job per file). A failure names every module over the limit with its
length: split it by responsibility and re-export the names other modules import."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIMIT = 500
#: Every top-level folder of our Python code; tests/ is not held to the limit.
PACKAGES = ("api", "chaining", "cli", "neural", "rules", "scripts", "tui", "workbench")


def modules() -> list[Path]:
    """The project's non-test Python files (a new top-level package must be added to PACKAGES)."""
    return sorted(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py") if "__pycache__" not in p.parts)


def too_long(paths: list[Path], limit: int = LIMIT) -> list[str]:
    """`path: N lines` for each file longer than `limit` lines, longest first."""
    sizes = [(len(p.read_text(encoding="utf-8").splitlines()), p) for p in paths]
    return [f"{p.relative_to(ROOT)}: {n} lines" for n, p in sorted(sizes, reverse=True) if n > limit]


def test_no_module_is_over_500_lines() -> None:
    over = too_long(modules())
    assert not over, f"modules over the {LIMIT}-line limit (split them by responsibility):\n" + "\n".join(over)


def test_every_python_package_of_the_repository_is_checked() -> None:
    folders = {p.name for p in ROOT.iterdir() if p.is_dir() and not p.name.startswith(".")}
    with_python = {f for f in folders - {"tests"} if any((ROOT / f).rglob("*.py"))}
    assert with_python <= set(PACKAGES), f"add to PACKAGES: {sorted(with_python - set(PACKAGES))}"
    assert len(modules()) > 300


def test_the_check_names_each_module_over_the_limit() -> None:
    short, long_ = ROOT / "tests" / "test_module_size.py", ROOT / "cli" / "app.py"
    n = len(long_.read_text(encoding="utf-8").splitlines())
    assert too_long([short, long_], limit=n - 1) == [f"cli/app.py: {n} lines"]
    assert too_long([short, long_], limit=n) == []
