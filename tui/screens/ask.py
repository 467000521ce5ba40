"""Ask screen: a backward-chaining consultation — the prover asks, the person answers, WHY and HOW.

The consultation is a backend resource (in-process `workbench.consultation`, or
`/v1/consultations` on a server), so it works the same attached to a server. Answers are shown as
they are proven; without "all answers" the search stops at the first, as `workbench kb ask` does.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.markup import escape
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import Input, RichLog, Static

from ..messages import ConsultationFinished
from .base import CallFailed, WorkbenchScreen
from .facts_dialog import FactsDialog, RunRequest

_CANCEL = object()


@dataclass(slots=True)
class Question:
    """The open question as the backend describes it (`choices` [] means free text)."""

    text: str
    choices: list[str] = field(default_factory=list)
    why: list[str] = field(default_factory=list)
    relation: str = ""
    fact: str = ""
    number: int | None = None  # the consultation's question number (answers carry it: no answer reaches a later one)

    @classmethod
    def from_dict(cls, q: dict[str, Any]) -> Question:
        return cls(
            text=str(q.get("text") or q.get("fact") or "?"),
            choices=list(q.get("choices") or []),
            why=list(q.get("why") or []),
            relation=str(q.get("relation") or ""),
            fact=str(q.get("fact") or ""),
            number=q.get("number") if isinstance(q.get("number"), int) else None,
        )


def answer_line(number: int, answer: dict[str, Any]) -> str:
    bindings = answer.get("bindings") or {}
    shown = " ".join(f"?{k}={v}" for k, v in bindings.items()) or answer.get("fact") or "(proved)"
    cf = f"  certainty {answer['certainty']:.3f}" if isinstance(answer.get("certainty"), (int, float)) else ""
    return f"  {number}. {shown}{cf}"


class AskScreen(WorkbenchScreen):
    """Consult a knowledge base backwards: prove a goal, answering the questions it needs."""

    MODE = "ask"
    TITLE = "Ask"
    HOME = "#ask-log"
    CSS_PATH = Path(__file__).with_name("ask.tcss")
    HELP = """\
**ctrl+r** starts a consultation: name the knowledge base and a goal such as `(animal ?x)`, and
tick *all answers* to search past the first. The prover asks for askable facts; type an answer
and enter. Type **why** at a question to see the chain of goals that led to it. Answers appear as
they are proven; type **how** (or **how 2** for the second answer) to see a proof. **esc** ends a
running consultation (or leaves the answer field).
"""
    BINDINGS = [
        Binding("ctrl+r", "start", "Consult"),
        Binding("escape", "escape", "Stop", show=False),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.question: Question | None = None
        self.answers: asyncio.Queue[object] = asyncio.Queue()
        self.result: dict | None = None
        self.request: RunRequest | None = None
        self.consultation_id: str | None = None
        self.running = False
        self.facts_text = "[]"

    def body(self) -> ComposeResult:
        with Vertical():
            yield Static("no consultation — ctrl+r to start one", id="ask-status", classes="pane-title")
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
            self.notify("a consultation is running: answer it or press esc", severity="warning")
            return
        r = self.request
        self.app.push_screen(
            FactsDialog(
                r.knowledge_base if r else "",
                self.facts_text,
                with_goal=True,
                goal=r.goal if r else "",
                all_answers=r.all_answers if r else False,
            ),
            self._requested,
        )

    def _requested(self, request: RunRequest | None) -> None:
        if request is not None:
            self.request = request
            self.facts_text = json.dumps(request.facts, indent=2)
            self.consult(request)

    def escape_pressed(self) -> None:
        if self.running:
            self.answers.put_nowait(_CANCEL)
        else:
            self.leave_field()

    @work(exclusive=True, group="ask", exit_on_error=False)
    async def consult(self, request: RunRequest) -> None:
        self.result = None
        while not self.answers.empty():
            self.answers.get_nowait()
        if self.consultation_id is not None:  # the previous one is over: forget it
            old, self.consultation_id = self.consultation_id, None
            try:
                await asyncio.to_thread(self.backend.stop_consultation, old)
            except Exception:  # noqa: BLE001 - it may have expired already
                pass
        self.query_one(RichLog).clear()
        every = "all answers" if request.all_answers else "first answer"
        self.log_line(f"goal {request.goal}  ·  knowledge base {request.knowledge_base}  ·  {every}", "bold")
        self.query_one("#ask-status", Static).update(f"consulting: {escape(request.goal)}")
        state = await self.call(
            "consultation",
            self.backend.start_consultation,
            request.knowledge_base,
            request.goal,
            request.facts,
            all_answers=request.all_answers,
        )
        self.consultation_id = cid = state["id"]
        self.running, shown = True, 0
        try:
            while True:
                self.result = state  # HOW works on answers proven so far
                shown = self._show_new_answers(state, shown)
                if state["state"] == "asking":
                    asked = Question.from_dict(state["question"])
                    self._set_question(asked)
                    answer = await self.answers.get()
                    while isinstance(answer, tuple) and answer[0] != asked.number:
                        answer = await self.answers.get()  # typed for an earlier question (a repeated key): dropped
                    if answer is _CANCEL:
                        await self.call("stop", self.backend.stop_consultation, cid)
                        self.consultation_id = None
                        state = {**state, "state": "cancelled", "question": None}
                        break
                    self._set_question(None)
                    try:
                        number, text = answer if isinstance(answer, tuple) else (asked.number, answer)
                        state = await self.call("answer", self.backend.answer_consultation, cid, str(text), number)
                    except CallFailed:  # refused (not a choice) or lost: read the state again
                        state = await self.call("consultation", self.backend.consultation, cid)
                elif state["state"] == "proving":
                    if not self.answers.empty() and self.answers.get_nowait() is _CANCEL:  # esc while proving
                        await self.call("stop", self.backend.stop_consultation, cid)
                        self.consultation_id = None
                        state = {**state, "state": "cancelled", "question": None}
                        break
                    state = await self.call(
                        "consultation", self.backend.consultation, cid, after=state["revision"], wait_s=5.0
                    )
                else:
                    break
        finally:
            self.running = False
            self._set_question(None)
        self.finish(request, state, shown)

    def _show_new_answers(self, state: dict[str, Any], shown: int) -> int:
        answers = state.get("answers") or []
        for i in range(shown, len(answers)):
            if i == 0:
                self.log_line("proved:", "bold green")
            self.log_line(answer_line(i + 1, answers[i]), "green")
        return len(answers)

    def finish(self, request: RunRequest, state: dict[str, Any], shown: int) -> None:
        """Say how the consultation ended: every answer (as proven), skipped rules, or the error."""
        self.result = state
        answers = state.get("answers") or []
        if state["state"] == "failed":
            self.log_line(f"failed: {state.get('error')}", "bold red")
        elif state["state"] == "cancelled":
            self.log_line("stopped", "bold yellow")
        if answers:
            more = "" if request.all_answers else " (the first; tick 'all answers' for more)"
            self.log_line(f"{len(answers)} answer(s){more} — type 'how' (or 'how N') to see a proof", "bold green")
        elif state["state"] == "finished":
            self.log_line("no answer: the goal could not be proved", "bold red")
        for skipped in state.get("skipped_rules") or []:
            text = f"{skipped.get('rule')}: {skipped.get('reason')}" if isinstance(skipped, dict) else str(skipped)
            self.log_line(f"not used backwards: {text}", "dim")
        self.query_one("#ask-status", Static).update(
            f"{escape(request.goal)}: {len(answers)} answer(s) · {state['state']}"
        )
        self.post_message(ConsultationFinished(state))

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
            self.notify("no open question: ctrl+r starts a consultation; 'how' explains an answer", severity="warning")

    def answer(self, text: str) -> None:
        """Answer the open question (checked against its allowed answers)."""
        q = self.question
        if q is None:
            return
        if q.choices and text not in q.choices:
            self.notify(f"answer one of: {', '.join(q.choices)} (or 'why')", severity="warning")
            return
        self.log_line(f"  > {text}")
        self.answers.put_nowait((q.number, text))
        self.question = None  # a second answer typed before the next question appears goes nowhere

    @work(group="ask-why", exit_on_error=False)
    async def why(self) -> None:
        """Show the chain of goals that led to the open question."""
        if self.question is None or self.consultation_id is None:
            self.notify("WHY applies to an open question", severity="warning")
            return
        reply = await self.call("why", self.backend.consultation_why, self.consultation_id)
        self.log_line("WHY is this asked?", "bold cyan")
        for depth, line in enumerate(reply.get("why") or []):
            self.log_line(f"  {'  ' * depth}{'└ ' if depth else ''}{line}", "cyan")
        if self.question is not None:
            self.log_line(f"? {self.question.text}", "bold yellow")

    @work(group="ask-how", exit_on_error=False)
    async def how(self, which: str) -> None:
        """Show the proof (HOW) of answer `which` (1-based; default the first)."""
        answers = (self.result or {}).get("answers") or []
        if not answers or self.consultation_id is None:
            self.notify("HOW applies to a proven answer: finish a consultation first", severity="warning")
            return
        try:
            number = int(which) if which else 1
        except ValueError:
            number = 0
        if not 1 <= number <= len(answers):
            self.notify(f"how N with N from 1 to {len(answers)}", severity="warning")
            return
        reply = await self.call("how", self.backend.consultation_how, self.consultation_id, number)
        self.log_line(f"HOW answer {number} was proved:", "bold green")
        for line in reply.get("lines") or []:
            self.log_line(f"  {line}", "green")
