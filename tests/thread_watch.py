"""A pytest plugin (registered by tests/conftest.py) that reports threads a test module left running.

A thread a module's tests or fixtures start and never stop (a server not stopped, a recorder not
closed, a `threading.Thread` not joined) lives on into later modules and can write to state their
tests read (CI stop 30: a leftover writer evicted `workbench.store.database._RECENT` entries another
test counted). After each module's last teardown, threads alive then that were not alive before its
first test are listed in the terminal summary with the module that left them, non-daemon ones first
(they also keep the interpreter from exiting). A report only: it never fails a test or the run, so
it cannot make CI flaky. Threads that a session-scoped fixture starts on purpose (a model registry's
batchers) are listed once, under the module whose test first asked for the fixture.
"""

from __future__ import annotations

import threading
import time

import pytest

_GRACE_S = 0.25  # a thread told to stop in teardown may still be on its way out: wait this long at most


def _describe(t: threading.Thread) -> str:
    target = getattr(t, "_target", None)
    where = f"{target.__module__}.{target.__qualname__}" if callable(target) and hasattr(target, "__qualname__") else ""
    return f"{t.name} ({'daemon' if t.daemon else 'NON-DAEMON'}{', ' + where if where else ''})"


class ThreadWatch:
    """Per module: the threads alive before its first test, compared after its last teardown."""

    def __init__(self) -> None:
        self.before: set[threading.Thread] | None = None
        self.left: list[tuple[str, list[threading.Thread]]] = []

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_setup(self, item):
        if self.before is None:
            self.before = set(threading.enumerate())
        yield

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_teardown(self, item, nextitem):
        yield
        module = getattr(item, "module", None)
        if nextitem is not None and getattr(nextitem, "module", None) is module:
            return
        new = [t for t in threading.enumerate() if t not in (self.before or set()) and t.is_alive()]
        deadline = time.monotonic() + _GRACE_S
        for t in new:
            t.join(max(0.0, deadline - time.monotonic()))
        new = [t for t in new if t.is_alive()]
        if new:
            self.left.append((module.__name__ if module else item.nodeid, new))
        self.before = None

    def pytest_terminal_summary(self, terminalreporter):
        if not self.left:
            return
        terminalreporter.section("threads left running after their module (report only)")
        for module, threads in self.left:
            threads = sorted(threads, key=lambda t: (t.daemon, t.name))
            terminalreporter.write_line(f"{module}: {len(threads)}: " + "; ".join(_describe(t) for t in threads))
