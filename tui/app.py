"""`WorkbenchApp`: the Textual application behind `workbench tui`.

Six screens run as Textual modes (Pipelines, Rules, Run, Ask, Models, History), switched with
the keys 1–6 from lists, trees and tables (in a text field digits type; esc leaves the field).
f1 opens the help screen listing the bindings active where it was opened; ctrl+p opens the
palette, which offers every screen, every action of the screen in front, and help. Keys are
shown exactly as typed everywhere (footer, help, palette). All data comes from a `Backend`
(in-process `Workbench` facade, or HTTP to `workbench serve`); in remote mode a banner says
whether the server answers, and the app pings it every two seconds to reconnect by itself.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from textual import work
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.reactive import reactive
from textual.screen import ModalScreen, Screen
from textual.worker import Worker, WorkerState

from .backend import Backend, BackendError
from .screens.ask import AskScreen
from .screens.base import CallFailed, WorkbenchScreen, is_text_field
from .screens.help import HelpScreen, format_key
from .screens.history import HistoryScreen
from .screens.knowledge_bases import KnowledgeBaseScreen
from .screens.models import ModelsScreen
from .screens.pipelines import PipelinesScreen
from .screens.run import RunScreen
from .widgets.nav_bar import SCREENS

#: seconds between pings of a remote server (the connection banner)
PING_S = 2.0


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
    connection: reactive[dict] = reactive(dict, always_update=True)

    def __init__(self, backend: Backend, *, mode: str = "pipelines") -> None:
        super().__init__()
        if mode not in self.MODES:
            raise ValueError(f"unknown screen {mode!r}; one of {', '.join(self.MODES)}")
        self.backend = backend
        self.start_mode = mode
        self.sub_title = backend.description
        self.connection = backend.connection()

    def on_mount(self) -> None:
        self.switch_mode(self.start_mode)
        if self.backend.remote:
            self.set_interval(PING_S, self.check_connection)

    @work(thread=True, exclusive=True, group="ping", exit_on_error=False)
    def check_connection(self) -> None:
        """Ping the server and publish its state for the banner (never a notification)."""
        try:
            self.backend.ping()
        except BackendError:
            pass
        self.call_from_thread(setattr, self, "connection", self.backend.connection())

    # ---- keys ------------------------------------------------------------------------------
    def get_key_display(self, binding: Binding) -> str:
        """Keys as typed (`v`, `ctrl+s`, `esc`), the same in the footer, the Keys panel and help."""
        return binding.key_display or format_key(binding.key)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # Digits switch screens from lists, trees and tables only: never from a dialog or a text field.
        if action == "switch_mode" and (isinstance(self.screen, ModalScreen) or is_text_field(self.screen.focused)):
            return False
        return True

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
            rows.append((rank, self.get_key_display(binding), binding.description or binding.action, where))
        rows.sort(key=lambda r: r[0])
        title = f"{getattr(screen, 'TITLE', None) or type(screen).__name__} · {self.backend.description}"
        notes = getattr(screen, "HELP", "")
        self.push_screen(HelpScreen(title, notes, [r[1:] for r in rows]))

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        """The palette: Textual's own commands, help, every screen, and every action of `screen`."""
        yield from super().get_system_commands(screen)
        yield SystemCommand("Help (f1)", "Keys and notes of the screen in front", self.action_help)
        for number, (mode, title) in enumerate(SCREENS, 1):
            yield SystemCommand(
                f"Go to {title} ({number})", f"Switch to the {title} screen", lambda m=mode: self.switch_mode(m)
            )
        seen: set[str] = set()
        for b in screen.active_bindings.values():
            binding, node = b.binding, b.node
            if node is not screen or binding.action in seen or not binding.description:
                continue
            seen.add(binding.action)
            yield SystemCommand(
                f"{binding.description} ({self.get_key_display(binding)})",
                f"{getattr(screen, 'TITLE', '')}: {binding.description}",
                lambda a=binding.action, s=screen: self.call_later(self.run_action, a, s),
            )

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
