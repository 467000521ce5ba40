"""`FactsDialog`: ask which rule files to run and the initial facts (JSON) before a forward run."""

from __future__ import annotations

import json
from dataclasses import dataclass

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label, Static, TextArea

EXAMPLE = '[\n  {"template": "person", "slots": {"name": "ann", "age": 30}}\n]'


@dataclass(slots=True)
class RunRequest:
    """What to run: rule files (relative paths), facts (JSON list) and an optional goal (Ask screen)."""

    paths: list[str]
    facts: list[dict]
    goal: str = ""


def parse_facts(text: str) -> list[dict]:
    """Facts from JSON text: a list of objects (or {"facts": [...]}); ValueError names line and column."""
    if not text.strip():
        return []
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"facts: line {exc.lineno}, column {exc.colno}: {exc.msg}") from exc
    if isinstance(data, dict) and "facts" in data:
        data = data["facts"]
    if not isinstance(data, list) or not all(isinstance(f, dict) for f in data):
        raise ValueError('facts: expected a JSON list of objects like {"template": ..., "slots": {...}}')
    return data


class FactsDialog(ModalScreen[RunRequest | None]):
    """Modal form: files, facts and (when `with_goal`) a goal; Ctrl+R accepts, Esc cancels."""

    BINDINGS = [Binding("ctrl+r", "accept", "Run", priority=True), Binding("escape", "cancel", "Cancel")]
    DEFAULT_CSS = """
    FactsDialog { align: center middle; }
    #facts-box { width: 74; height: 20; border: thick $accent; background: $surface; padding: 0 1; }
    #facts-box Label { height: 1; margin-top: 1; }
    #facts-text { height: 1fr; }
    """

    def __init__(self, paths: list[str], facts_text: str = "", *, with_goal: bool = False, goal: str = "") -> None:
        super().__init__()
        self.paths, self.facts_text, self.with_goal, self.goal = paths, facts_text, with_goal, goal

    def compose(self) -> ComposeResult:
        with Vertical(id="facts-box"):
            yield Static("[b]Run rules[/b] — Ctrl+R run · Esc cancel")
            yield Label("Rule files (comma-separated, relative to knowledge_bases/)")
            yield Input(", ".join(self.paths), id="facts-paths")
            if self.with_goal:
                yield Label("Goal (a CLIPS pattern, e.g. (animal ?x))")
                yield Input(self.goal, id="facts-goal", placeholder="(goal ?x)")
            yield Label("Initial facts (JSON list)")
            yield TextArea(self.facts_text or "[]", id="facts-text", language=None, show_line_numbers=True)

    def on_mount(self) -> None:
        (self.query_one("#facts-goal", Input) if self.with_goal else self.query_one("#facts-text", TextArea)).focus()

    def action_cancel(self) -> None:
        self.dismiss(None)

    def action_accept(self) -> None:
        paths = [p.strip() for p in self.query_one("#facts-paths", Input).value.split(",") if p.strip()]
        if not paths:
            self.notify("name at least one rule file", severity="error")
            return
        try:
            facts = parse_facts(self.query_one("#facts-text", TextArea).text)
        except ValueError as exc:
            self.notify(str(exc), severity="error")
            return
        goal = self.query_one("#facts-goal", Input).value.strip() if self.with_goal else ""
        if self.with_goal and not goal:
            self.notify("type a goal, e.g. (animal ?x)", severity="error")
            return
        self.dismiss(RunRequest(paths, facts, goal))
