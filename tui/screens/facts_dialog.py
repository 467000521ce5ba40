"""`FactsDialog`: ask which rule files to run and the initial facts (JSON) before a forward run."""

from __future__ import annotations

import json
from dataclasses import dataclass

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Checkbox, Input, Label, Static, TextArea

EXAMPLE = '[\n  {"template": "person", "slots": {"name": "ann", "age": 30}}\n]'


@dataclass(slots=True)
class RunRequest:
    """What to run: a knowledge base (by name), facts (JSON list) and an optional goal (Ask screen)."""

    knowledge_base: str
    facts: list[dict]
    goal: str = ""
    all_answers: bool = False


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

    BINDINGS = [Binding("ctrl+r", "accept", "Run", priority=True), Binding("escape", "cancel", "Cancel", priority=True)]
    DEFAULT_CSS = """
    FactsDialog { align: center middle; }
    #facts-box { width: 74; height: 22; border: thick $accent; background: $surface; padding: 0 1; }
    #facts-all { height: 3; border: none; }
    #facts-box Label { height: 1; margin-top: 1; }
    #facts-text { height: 1fr; }
    """

    def __init__(
        self,
        knowledge_base: str,
        facts_text: str = "",
        *,
        with_goal: bool = False,
        goal: str = "",
        all_answers: bool = False,
        choices: list[str] | None = None,
    ) -> None:
        super().__init__()
        self.all_answers = all_answers
        self.knowledge_base, self.facts_text, self.with_goal, self.goal = knowledge_base, facts_text, with_goal, goal
        self.choices = choices or []

    def compose(self) -> ComposeResult:
        with Vertical(id="facts-box"):
            yield Static(
                f"[b]{'Consult' if self.with_goal else 'Run rules'}[/b] — "
                f"ctrl+r {'start' if self.with_goal else 'run'} · esc cancel"
            )
            known = f" — one of: {', '.join(self.choices)}" if self.choices else ""
            yield Label(f"Knowledge base{known}"[:70])
            yield Input(self.knowledge_base, id="facts-kb")
            if self.with_goal:
                yield Label("Goal (a CLIPS pattern, e.g. (animal ?x))")
                yield Input(self.goal, id="facts-goal", placeholder="(goal ?x)")
                yield Checkbox("all answers (default: stop at the first)", self.all_answers, id="facts-all")
            yield Label("Initial facts (JSON list)")
            yield TextArea(self.facts_text or "[]", id="facts-text", language=None, show_line_numbers=True)

    def on_mount(self) -> None:
        # the first field that still needs typing, top to bottom (never one below an empty one)
        kb = self.query_one("#facts-kb", Input)
        if not kb.value.strip():
            kb.focus()
        elif self.with_goal:
            self.query_one("#facts-goal", Input).focus()
        else:
            self.query_one("#facts-text", TextArea).focus()

    def action_cancel(self) -> None:
        self.dismiss(None)

    def action_accept(self) -> None:
        name = self.query_one("#facts-kb", Input).value.strip()
        if not name:
            self.notify("name a knowledge base", severity="error")
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
        all_answers = self.query_one("#facts-all", Checkbox).value if self.with_goal else False
        self.dismiss(RunRequest(name, facts, goal, all_answers))
