"""`WorkbenchScreen`: what every main screen shares — nav bar, footer, backend calls off the UI thread."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypeVar

from textual.app import ComposeResult
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer

from ..backend import Backend, BackendError
from ..widgets.nav_bar import NavBar

T = TypeVar("T")


class CallFailed(Exception):
    """A backend call failed and the person was already notified; ends the worker quietly."""


class WorkbenchScreen(Screen):
    """Base for the six main screens. Subclasses set `MODE` and `HELP` and compose `body()`."""

    MODE: str = ""
    #: Markdown shown at the top of the help screen for this screen.
    HELP: str = ""

    @property
    def backend(self) -> Backend:
        return self.app.backend  # type: ignore[attr-defined]

    def compose(self) -> ComposeResult:
        yield NavBar(self.MODE)
        yield from self.body()
        yield Footer()

    def body(self) -> ComposeResult:  # pragma: no cover - overridden
        yield from ()

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
