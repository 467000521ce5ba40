"""Ask screen: a backward-chaining consultation — the prover asks, the person answers, WHY and HOW."""

from __future__ import annotations

import json
import queue
from pathlib import Path

from rich.markup import escape
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import Input, RichLog, Static

from ..backend import Question
from ..messages import ConsultationFinished
from ..widgets.proof_format import render_proof
from .base import WorkbenchScreen
from .facts_dialog import FactsDialog, RunRequest


class ConsultationCancelled(Exception):
    """The person ended the consultation while a question was open."""


_CANCEL = object()


class AskScreen(WorkbenchScreen):
    """Consult a knowledge base backwards: prove a goal, answering the questions it needs."""

    MODE = "ask"
    TITLE = "Ask"
    CSS_PATH = Path(__file__).with_name("ask.tcss")
    HELP = """\
**Ctrl+R** starts a consultation: name the knowledge base and a goal such as `(animal ?x)`. The
prover asks for askable facts; type an answer and Enter. Type **why** at a question to see the
chain of goals that led to it. When it concludes, type **how** (or **how 2** for the second
answer) to see the proof. **Esc** ends a consultation.
"""
    BINDINGS = [
        Binding("ctrl+r", "start", "Consult"),
        Binding("escape", "stop", "Stop", show=False),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.question: Question | None = None
        self.answers: queue.Queue[object] = queue.Queue()
        self.result: dict | None = None
        self.request: RunRequest | None = None
        self.running = False
        self.facts_text = "[]"

    def body(self) -> ComposeResult:
        with Vertical():
            yield Static("no consultation — Ctrl+R to start one", id="ask-status", classes="pane-title")
            yield RichLog(id="ask-log", wrap=True, markup=False, highlight=False)
            yield Static("", id="ask-question")
            yield Input(placeholder="answer, 'why' or 'how'", id="ask-input")

    def on_mount(self) -> None:
        self.query_one("#ask-question").display = False
        self.query_one("#ask-input", Input).focus()

    def log_line(self, text: str | Text, style: str = "") -> None:
        self.query_one(RichLog).write(Text(text, style=style) if isinstance(text, str) else text)

    # ---- start / stop ----------------------------------------------------------------------
    def action_start(self) -> None:
        if self.running:
            self.notify("a consultation is running: answer it or press Esc", severity="warning")
            return
        name = self.request.knowledge_base if self.request else ""
        goal = self.request.goal if self.request else ""
        self.app.push_screen(FactsDialog(name, self.facts_text, with_goal=True, goal=goal), self._requested)

    def _requested(self, request: RunRequest | None) -> None:
        if request is not None:
            self.request = request
            self.facts_text = json.dumps(request.facts, indent=2)
            self.consult(request)

    def action_stop(self) -> None:
        if self.running:
            self.answers.put(_CANCEL)

    @work(exclusive=True, group="ask", exit_on_error=False)
    async def consult(self, request: RunRequest) -> None:
        self.running, self.result = True, None
        while not self.answers.empty():
            self.answers.get_nowait()
        self.query_one(RichLog).clear()
        self.log_line(f"goal {request.goal}  ·  knowledge base {request.knowledge_base}", "bold")
        self.query_one("#ask-status", Static).update(f"consulting: {escape(request.goal)}")
        try:
            result = await self.call(
                "consultation",
                self.backend.consult,
                request.knowledge_base,
                request.goal,
                request.facts,
                self._ask,
                all_answers=True,
            )
        finally:
            self.running = False
            self._set_question(None)
        self.result = result
        answers = result.get("answers") or []
        if answers:
            self.log_line(f"{len(answers)} answer(s):", "bold green")
            for i, a in enumerate(answers, start=1):
                bindings = (
                    " ".join(f"?{k}={v}" for k, v in (a.get("bindings") or {}).items()) or a.get("fact") or "(proved)"
                )
                cf = f"  certainty {a['certainty']:.3f}" if isinstance(a.get("certainty"), (int, float)) else ""
                self.log_line(f"  {i}. {bindings}{cf}")
            self.log_line("type 'how' (or 'how N') to see a proof", "dim")
        else:
            self.log_line("no answer: the goal could not be proved", "bold red")
        for skipped in result.get("skipped_rules") or []:
            text = f"{skipped.get('rule')}: {skipped.get('reason')}" if isinstance(skipped, dict) else str(skipped)
            self.log_line(f"not used backwards: {text}", "dim")
        self.query_one("#ask-status", Static).update(f"{escape(request.goal)}: {len(answers)} answer(s)")
        self.post_message(ConsultationFinished(result))

    # ---- questions (called on the worker thread) -------------------------------------------
    def _ask(self, question: Question) -> str:
        """The person-provider: show the question, block this worker thread until it is answered."""
        self.app.call_from_thread(self._set_question, question)
        answer = self.answers.get()
        if answer is _CANCEL:
            raise ConsultationCancelled("consultation stopped by the person")
        return str(answer)

    def _set_question(self, question: Question | None) -> None:
        self.question = question
        panel = self.query_one("#ask-question", Static)
        panel.display = question is not None
        if question is None:
            return
        choices = f"  [{' / '.join(question.choices)}]" if question.choices else ""
        panel.update(f"[b]? {escape(question.text)}[/b]{escape(choices)}")
        self.log_line(f"? {question.text}{choices}", "bold yellow")
        self.query_one("#ask-input", Input).focus()

    @on(Input.Submitted, "#ask-input")
    def _typed(self, event: Input.Submitted) -> None:
        text = event.value.strip()
        event.input.value = ""
        if not text:
            return
        word = text.lower()
        if word == "why":
            self.why()
        elif word.startswith("how"):
            self.how(word[3:].strip())
        elif self.question is not None:
            self.answer(text)
        else:
            self.notify("no open question: Ctrl+R starts a consultation; 'how' explains an answer", severity="warning")

    def answer(self, text: str) -> None:
        """Answer the open question (checked against its allowed answers)."""
        q = self.question
        if q is None:
            return
        if q.choices and text not in q.choices:
            self.notify(f"answer one of: {', '.join(q.choices)} (or 'why')", severity="warning")
            return
        self.log_line(f"  > {text}")
        self._set_question(None)
        self.answers.put(text)

    def why(self) -> None:
        """Show the chain of goals that led to the open question."""
        q = self.question
        if q is None:
            self.notify("WHY applies to an open question", severity="warning")
            return
        self.log_line("WHY is this asked?", "bold cyan")
        for depth, line in enumerate(q.why or ["(the goal itself needs it)"]):
            self.log_line(f"  {'  ' * depth}{'└ ' if depth else ''}{line}", "cyan")
        self.log_line(f"? {q.text}", "bold yellow")

    def how(self, which: str) -> None:
        """Show the proof (HOW) of answer `which` (1-based; default the first)."""
        answers = (self.result or {}).get("answers") or []
        if not answers:
            self.notify("HOW applies to a conclusion: finish a consultation first", severity="warning")
            return
        try:
            index = int(which) - 1 if which else 0
            answer = answers[index]
        except (ValueError, IndexError):
            self.notify(f"how N with N from 1 to {len(answers)}", severity="warning")
            return
        self.log_line(f"HOW answer {index + 1} was proved:", "bold green")
        lines = answer.get("how")
        for line in lines.splitlines() if isinstance(lines, str) and lines else render_proof(answer.get("proof")):
            self.log_line(f"  {line}", "green")
