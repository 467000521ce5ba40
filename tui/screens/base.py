"""`WorkbenchScreen`: what every main screen shares — nav bar, connection banner (remote), footer,
esc that leaves a text field, and backend calls off the UI thread."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypeVar

from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer, Input, TextArea

from ..backend import Backend, BackendError
from ..widgets.connection_banner import ConnectionBanner
from ..widgets.nav_bar import NavBar

T = TypeVar("T")


class CallFailed(Exception):
    """A backend call failed and the person was already notified; ends the worker quietly."""


def is_text_field(widget: Widget | None) -> bool:
    """Inputs and editors: where printable keys (digits too) type instead of acting."""
    return isinstance(widget, (Input, TextArea))


class WorkbenchScreen(Screen):
    """Base for the six main screens. Subclasses set `MODE`, `HELP` and `HOME` and compose `body()`."""

    MODE: str = ""
    #: Markdown shown at the top of the help screen for this screen.
    HELP: str = ""
    #: Where esc in a text field sends the focus (a list, tree or table: digits switch screens there).
    HOME: str = ""
    BINDINGS = [Binding("escape", "escape", "Leave field", show=False)]

    @property
    def backend(self) -> Backend:
        return self.app.backend  # type: ignore[attr-defined]

    def compose(self) -> ComposeResult:
        yield NavBar(self.MODE)
        if self.backend.remote:
            yield ConnectionBanner(getattr(self.backend, "base_url", ""))
        yield from self.body()
        yield Footer()

    def body(self) -> ComposeResult:  # pragma: no cover - overridden
        yield from ()

    # ---- esc -------------------------------------------------------------------------------
    def action_escape(self) -> None:
        """Close the Keys panel when it is open; otherwise `escape_pressed()`."""
        if self.query("HelpPanel"):
            self.app.action_hide_help_panel()
            return
        self.escape_pressed()

    def escape_pressed(self) -> None:
        """Default: leave a text field for the screen's home widget (subclasses add more)."""
        self.leave_field()

    def leave_field(self) -> bool:
        """Move the focus from a text field to `HOME` (or nowhere); True when it moved."""
        if not is_text_field(self.focused):
            return False
        home = self.query(self.HOME).first() if self.HOME and self.query(self.HOME) else None
        if home is not None and home.focusable:
            home.focus()
        else:
            self.set_focus(None)
        return True

    # ---- backend calls ---------------------------------------------------------------------
    async def call(self, label: str, fn: Callable[..., T], *args: Any, busy: Widget | None = None, **kwargs: Any) -> T:
        """Run a blocking backend call on a thread while `busy` shows a loading indicator.

        Returns the call's result. On `BackendError` (or any other exception) the person gets an
        error notification and `CallFailed` is raised, which ends the calling worker quietly.

        A loading widget cannot hold focus, so Textual may hand it to another widget meanwhile (a
        screen's auto-focus, or a `focus()` that lands while `busy` is loading). When `busy` had the
        focus, or nothing had it yet, focus returns to `busy` when the call ends; otherwise focus is
        left where the person put it.
        """
        app = self.app
        app.busy_labels = (*app.busy_labels, label)  # type: ignore[attr-defined]
        refocus = busy is not None and busy.can_focus and (self.focused is None or busy.has_focus_within)
        if busy is not None:
            busy.loading = True
        try:
            return await asyncio.to_thread(fn, *args, **kwargs)
        except BackendError as exc:
            self.notify(str(exc), title=f"{label} failed", severity="error", timeout=8)
            raise CallFailed(str(exc)) from exc
        except Exception as exc:  # noqa: BLE001 - a bug in a lower room must not take the TUI down
            self.notify(f"{type(exc).__name__}: {exc}", title=f"{label} failed", severity="error", timeout=8)
            raise CallFailed(str(exc)) from exc
        finally:
            if busy is not None:
                busy.loading = False
                if refocus and busy.is_attached and not busy.has_focus_within:
                    busy.focus()
            labels = list(app.busy_labels)  # type: ignore[attr-defined]
            labels.remove(label)
            app.busy_labels = tuple(labels)  # type: ignore[attr-defined]
            if self.backend.remote:
                app.connection = self.backend.connection()  # type: ignore[attr-defined]
