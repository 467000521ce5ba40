"""`WorkbenchApp`: the Textual application behind `workbench tui`.

Six screens run as Textual modes (Pipelines, Rules, Run, Ask, Models, History), switched with
the keys 1–6; F1 opens the help screen listing the bindings active where it was opened. All
data comes from a `Backend` (in-process `Workbench` facade, or HTTP to `workbench serve`).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.reactive import reactive
from textual.screen import Screen
from textual.worker import Worker, WorkerState

from .backend import Backend
from .screens.ask import AskScreen
from .screens.base import CallFailed, WorkbenchScreen
from .screens.help import HelpScreen, format_key
from .screens.history import HistoryScreen
from .screens.knowledge_bases import KnowledgeBaseScreen
from .screens.models import ModelsScreen
from .screens.pipelines import PipelinesScreen
from .screens.run import RunScreen
from .widgets.nav_bar import SCREENS


class WorkbenchApp(App[None]):
    """Build, run and explain pipelines; edit and run rule files; watch models; browse runs."""

    TITLE = "Workbench"
    CSS_PATH = Path(__file__).with_name("app.tcss")
    MODES = {
        "pipelines": PipelinesScreen,
        "kb": KnowledgeBaseScreen,
        "run": RunScreen,
        "ask": AskScreen,
        "models": ModelsScreen,
        "history": HistoryScreen,
    }
    BINDINGS = [
        *(Binding(str(n), f"switch_mode('{mode}')", title, show=False) for n, (mode, title) in enumerate(SCREENS, 1)),
        Binding("f1", "help", "Help"),
        Binding("ctrl+q", "quit", "Quit", priority=True),
    ]

    busy_labels: reactive[tuple[str, ...]] = reactive(tuple)

    def __init__(self, backend: Backend, *, mode: str = "pipelines") -> None:
        super().__init__()
        if mode not in self.MODES:
            raise ValueError(f"unknown screen {mode!r}; one of {', '.join(self.MODES)}")
        self.backend = backend
        self.start_mode = mode
        self.sub_title = backend.description

    def on_mount(self) -> None:
        self.switch_mode(self.start_mode)

    def action_help(self) -> None:
        """Open the help screen for the screen in front."""
        screen = self.screen
        if isinstance(screen, HelpScreen):
            return
        rows: list[tuple[int, str, str, str]] = []
        seen: set[str] = set()
        for key, active in screen.active_bindings.items():
            binding = active.binding
            if key in seen or binding.action in ("", "noop"):
                continue
            seen.add(key)
            # the screen's own keys first, then the app's, then inherited ones and the focused widget's
            own = any(
                key in b.key.split(",")
                for b in type(active.node).__dict__.get("BINDINGS", [])
                if isinstance(b, Binding)
            )
            if active.node is screen:
                rank, where = (0 if own else 2), "this screen"
            elif active.node is self:
                rank, where = (1 if own else 2), "everywhere"
            else:
                rank, where = 3, type(active.node).__name__
            rows.append((rank, format_key(key), binding.description or binding.action, where))
        rows.sort(key=lambda r: r[0])
        title = f"{getattr(screen, 'TITLE', None) or type(screen).__name__} · {self.backend.description}"
        notes = getattr(screen, "HELP", "")
        self.push_screen(HelpScreen(title, notes, [r[1:] for r in rows]))

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for mode, title in SCREENS:
            yield SystemCommand(f"Go to {title}", f"Switch to the {title} screen", lambda m=mode: self.switch_mode(m))

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        # A worker that failed for a reason other than a backend call (already notified) is a bug
        # below or in the TUI: tell the person, keep running.
        worker = event.worker
        if event.state == WorkerState.ERROR and not isinstance(worker.error, CallFailed):
            self.notify(
                f"{type(worker.error).__name__}: {worker.error}",
                title=f"{worker.name or 'task'} failed",
                severity="error",
                timeout=10,
            )


__all__ = ["WorkbenchApp", "WorkbenchScreen"]
