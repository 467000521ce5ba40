"""`RunDetailScreen`: one recorded run — provenance, inputs and outputs, explanation, timing; replay."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rich.markup import escape
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Footer, Static, TabbedContent, TabPane

from ..messages import RunReplayed
from ..widgets.explanation_tree import ExplanationTree
from ..widgets.timing_table import TimingTable
from .base import CallFailed, WorkbenchScreen
from .dialogs import ChoiceDialog
from .replay_dialog import ReplayDialog


def provenance_text(run: dict[str, Any]) -> str:
    """Versions (content hashes) of everything the run used, inputs and outputs, as markup."""
    lines = [
        f"[b]run[/b] {run.get('run_id')}   [b]status[/b] {run.get('status')}   "
        f"[b]started[/b] {run.get('started_at') or '-'}",
        f"[b]pipeline[/b] {escape(str(run.get('pipeline')))} @ {run.get('version')}",
    ]
    if run.get("replay_of"):
        lines.append(f"[b]replay of[/b] {run['replay_of']}")
    if run.get("cache_hit"):
        lines.append(f"[b]cache hit[/b] from {run.get('cached_from')}")
    for title, key in (("knowledge bases", "knowledge_base_versions"), ("models", "model_versions")):
        versions = run.get(key) or {}
        lines.append(f"[b]{title}[/b]" + ("" if versions else " -"))
        lines += [escape(f"  {name} @ {version}") for name, version in versions.items()]
    if run.get("error"):
        lines.append(f"[b red]error[/] {escape(str(run['error']))}")
    lines.append("[b]inputs[/b] " + escape(json.dumps(run.get("inputs"), ensure_ascii=False)))
    lines.append("[b]outputs[/b] " + escape(json.dumps(run.get("outputs"), ensure_ascii=False)))
    return "\n".join(lines)


class RunDetailScreen(WorkbenchScreen):
    """Pushed from History: Esc goes back."""

    MODE = "history"
    TITLE = "Run"
    CSS_PATH = Path(__file__).with_name("run_detail.tcss")
    HELP = """\
One recorded run. **Provenance** names the exact pipeline, knowledge-base and model versions
(content hashes), the inputs and outputs. **Explanation** is the tree recorded with the run;
**Timing** is per node. **r** replays the run with an edited knowledge base: pick one, edit it
(the file on disk is not changed), ctrl+r — **Changes** (f5) then lists what came out differently.
esc in the editor cancels; a replay the rules refuse reopens your edit with the problems marked.
**esc** goes back to the list.
"""
    BINDINGS = [
        Binding("escape", "back", "Back"),
        Binding("r", "replay", "Replay"),
        Binding("f2", "show_tab('tab-provenance')", "Provenance"),
        Binding("f3", "show_tab('tab-explanation')", "Explanation"),
        Binding("f4", "show_tab('tab-timing')", "Timing"),
        Binding("f5", "show_tab('tab-changes')", "Changes"),
    ]

    def __init__(self, run_id: str) -> None:
        super().__init__()
        self.run_id = run_id
        self.run: dict[str, Any] | None = None
        self.replayed: dict[str, Any] | None = None
        self.drafts: dict[str, str] = {}  # edits of a replay the rules refused, per knowledge base

    def body(self) -> ComposeResult:
        yield Static(f"run {self.run_id}", id="detail-status", classes="pane-title")
        with TabbedContent(id="detail-tabs"):
            with TabPane("Provenance", id="tab-provenance"):
                with VerticalScroll():
                    yield Static("", id="detail-provenance")
            with TabPane("Explanation", id="tab-explanation"):
                yield ExplanationTree(id="detail-explanation")
            with TabPane("Timing", id="tab-timing"):
                yield TimingTable(id="detail-timing")
            with TabPane("Changes", id="tab-changes"):
                yield DataTable(id="detail-changes", cursor_type="row")

    def compose(self) -> ComposeResult:
        yield from self.body()
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#detail-changes", DataTable).add_columns("What", "Before", "After")
        self.load()

    @work(exclusive=True, group="detail", exit_on_error=False)
    async def load(self) -> None:
        run = await self.call(
            f"open run {self.run_id[:8]}", self.backend.get_run, self.run_id, busy=self.query_one(TabbedContent)
        )
        self.show_run(run)

    def show_run(self, run: dict[str, Any]) -> None:
        self.run = run
        self.query_one("#detail-status", Static).update(
            escape(
                f"run {str(run.get('run_id'))[:8]} · {run.get('pipeline')} · {run.get('status')} — r replay · esc back"
            )
        )
        self.query_one("#detail-provenance", Static).update(provenance_text(run))
        self.query_one(ExplanationTree).show(run.get("explanation"))
        self.query_one(TimingTable).show(*TimingTable.from_run(run))

    def action_back(self) -> None:
        self.app.pop_screen()

    def action_show_tab(self, tab: str) -> None:
        self.query_one(TabbedContent).active = tab

    # ---- replay ----------------------------------------------------------------------------
    def action_replay(self) -> None:
        if self.run is None:
            return
        names = list((self.run.get("knowledge_base_versions") or {}).keys())
        if not names:
            self.notify("this run used no knowledge base; replaying it unchanged", severity="warning")
            self.replay({})
            return
        if len(names) == 1:
            self.edit_kb(names[0])
        else:
            self.app.push_screen(
                ChoiceDialog("Replay with an edited knowledge base", [(n, n) for n in names]),
                lambda name: name and self.edit_kb(name),
            )

    @work(exclusive=True, group="detail-kb", exit_on_error=False)
    async def edit_kb(self, name: str, diagnostics: list[dict] | None = None) -> None:
        """Open the replay editor on `name`: the draft of a refused replay, else the recorded version."""
        assert self.run is not None
        text = self.drafts.get(name)
        if text is None:
            source = await self.call(f"read {name}", self.backend.run_kb_source, self.run_id, name)
            text = source["text"]
            if not source.get("recorded"):
                self.notify(
                    f"the version of {name} this run used is not stored; editing the current rules",
                    severity="warning",
                )
        self.app.push_screen(
            ReplayDialog(name, text, diagnostics), lambda edited: edited is not None and self.replay({name: edited})
        )

    @work(exclusive=True, group="detail-replay", exit_on_error=False)
    async def replay(self, kb_sources: dict[str, str]) -> None:
        table = self.query_one("#detail-changes", DataTable)
        table.clear()  # never leave the previous replay's changes under a new attempt
        self.replayed = None
        table.add_row("(replaying…)", "", "")
        try:
            result = await self.call(
                f"replay {self.run_id[:8]}",
                self.backend.replay_run,
                self.run_id,
                kb_sources,
                busy=self.query_one(TabbedContent),
            )
        except CallFailed as exc:
            table.clear()
            table.add_row("(replay failed)", "", str(exc)[:200])
            self.query_one(TabbedContent).active = "tab-changes"
            self.drafts.update(kb_sources)  # keep the edit: reopen it with the problems marked
            diagnostics = getattr(exc.__cause__, "diagnostics", [])
            if len(kb_sources) == 1:
                self.edit_kb(next(iter(kb_sources)), diagnostics)
            return
        for name in kb_sources:
            self.drafts.pop(name, None)
        self.replayed = result
        self.show_changes(result)
        self.post_message(RunReplayed(self.run_id, result))

    def show_changes(self, result: dict[str, Any]) -> None:
        """List what differs between the original run and the replay (the backend's changes table),
        and show the replay's explanation."""
        table = self.query_one("#detail-changes", DataTable)
        table.clear()
        for row in result.get("table") or [{"what": "(nothing changed)", "before": "", "after": ""}]:
            table.add_row(row["what"], row["before"], row["after"])
        table.focus()  # read the changes; esc goes back, digits switch screens
        replay = result.get("replay") or {}
        self.query_one(ExplanationTree).show(replay.get("explanation"))
        self.query_one(TabbedContent).active = "tab-changes"
        changed = "changed the outcome" if result.get("changed") else "did not change the outputs"
        self.notify(f"replay {str(replay.get('run_id'))[:8]} {changed}")
