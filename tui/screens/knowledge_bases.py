"""Rules screen: the files of `knowledge_bases/` as a tree, a CLIPS editor, check on save, run on facts;
scenario tests, decision tables and console programs (tui/screens/kb_rule_files.py)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from rich.markup import escape
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import ContentSwitcher, DataTable, OptionList, Static, TabbedContent, TabPane, Tree
from textual.widgets.option_list import Option

from ..messages import KnowledgeBaseChecked, KnowledgeBaseRan
from ..widgets.clips_editor import ClipsEditor, Marker
from ..widgets.file_tree import FileTree
from .base import CallFailed, WorkbenchScreen
from .dialogs import PromptDialog
from .facts_dialog import FactsDialog, RunRequest
from .kb_rule_files import ConsolePane, RuleFilesMixin, kind_of


class KnowledgeBaseScreen(RuleFilesMixin, WorkbenchScreen):
    """Browse, edit, check and run rule files; run scenario tests, read decision tables, run console programs."""

    MODE = "kb"
    #: Focus goes here when the screen opens (before its first load marks it loading; see WorkbenchScreen.call).
    AUTO_FOCUS = "#kb-tree"
    HOME = "#kb-tree"
    TITLE = "Rules"
    CSS_PATH = Path(__file__).with_name("knowledge_bases.tcss")
    HELP = """\
Pick a file in the tree (enter). Edit it; **ctrl+s** checks and saves it — a file with problems
is not written over a valid one: the edit stays here as a draft and the problems appear under the
editor with line and column (**f8** jumps to the next one). **f5** only checks. **ctrl+r** runs
the rules on facts you type as JSON and shows the firings, the final working memory and the
output. **ctrl+n** creates a new rule file, **ctrl+t** goes to the file tree, **esc** leaves the
editor.

**Scenario tests**: **ctrl+r** on a scenario file (`.yaml`, the format of `workbench kb test`), or
**f7** on a rule file with `NAME.scenarios.yaml` beside it, runs the scenarios: the Tests tab lists
pass/fail, and for the highlighted scenario what was expected and what was there (the facts of that
template, the rules that fired). **Decision tables** (`.csv`, `.xlsx`) open as a table of their
cells; **ctrl+g** shows the rules generated from the rows (as `workbench kb show`) and back; errors
are listed in full as `file.csv:ROW:COL: message`. **f6** runs the file's knowledge base with the
Console tab as its terminal: programs that ask with `read` / `readline` print their prompts there
and take your answers from the input line (**ctrl+d** ends the input, CLIPS's EOF). Console programs
run in-process only; attached to a server the TUI says so.
"""
    BINDINGS = [
        Binding("ctrl+s", "save", "Save+check"),
        Binding("f5", "check", "Check"),
        Binding("ctrl+r", "run", "Run"),
        Binding("f8", "next_problem", "Next error"),
        Binding("ctrl+t", "focus_tree", "Files"),
        Binding("ctrl+n", "new_file", "New file"),
        # priority: the editor binds f6/f7 (select line / select all; also shift+arrows, ctrl+a)
        Binding("f6", "console", "Console run", priority=True),
        Binding("f7", "test", "Test", priority=True),
        Binding("ctrl+g", "toggle_generated", "Generated rules"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.path: str | None = None
        self.saved_text: dict[str, str] = {}
        self.buffers: dict[str, str] = {}  # unsaved edits per file, kept when switching files
        self.diagnostics: list[dict] = []
        self.facts_text = "[]"
        self.last_result: dict | None = None
        self.located: list[dict] = []  # problems of a decision table / scenario file (no editor markers)

    def body(self) -> ComposeResult:
        with Horizontal():
            with Vertical(classes="sidebar"):
                yield Static("Knowledge bases", classes="pane-title")
                yield FileTree(id="kb-tree")
            with Vertical(id="kb-main"):
                yield Static("no file open", id="kb-status", classes="pane-title")
                with ContentSwitcher(id="kb-view", initial="kb-editor"):
                    yield ClipsEditor(id="kb-editor", read_only=True)
                    yield DataTable(id="kb-table", cursor_type="cell", zebra_stripes=True)
                with TabbedContent(id="kb-tabs"):
                    with TabPane("Problems", id="tab-problems"):
                        yield OptionList(id="kb-problems")
                    with TabPane("Firings", id="tab-firings"):
                        yield DataTable(id="kb-firings", cursor_type="row")
                    with TabPane("Memory", id="tab-memory"):
                        yield DataTable(id="kb-memory", cursor_type="row")
                    with TabPane("Output", id="tab-output"):
                        yield Static(id="kb-output")
                    with TabPane("Tests", id="tab-tests"):
                        with Horizontal():
                            yield DataTable(id="kb-tests", cursor_type="row")
                            with VerticalScroll(id="kb-test-scroll"):
                                yield Static(id="kb-test-detail")
                    with TabPane("Console", id="tab-console"):
                        yield ConsolePane(id="kb-console")

    def on_mount(self) -> None:
        self.query_one("#kb-firings", DataTable).add_columns("#", "Rule", "Facts")
        self.query_one("#kb-memory", DataTable).add_columns("Id", "Template", "Slots")
        self.query_one("#kb-tests", DataTable).add_columns("Result", "Scenario")
        self.load_files()

    def on_unmount(self) -> None:
        self.stop_console()  # a program waiting for an answer gets EOF and ends

    @on(TabbedContent.TabActivated, "#kb-tabs")
    def _tab_activated(self, event: TabbedContent.TabActivated) -> None:
        """Tests and Console get half the height; the others a strip under the editor."""
        self.query_one("#kb-tabs").set_class(event.pane.id in ("tab-tests", "tab-console"), "tall")

    # ---- files ------------------------------------------------------------------------------
    @work(exclusive=True, group="kb-files", exit_on_error=False)
    async def load_files(self) -> None:
        tree = self.query_one(FileTree)
        paths = await self.call("list rule files", self._all_files, busy=tree)
        tree.set_paths(paths)
        tree.focus()

    def _all_files(self) -> list[str]:
        """Rule files, decision tables and scenario files (one blocking call for the worker)."""
        b = self.backend
        return sorted({*b.list_kb_files(), *b.list_decision_tables(), *b.list_scenario_files()})

    @on(Tree.NodeSelected, "#kb-tree")
    def _file_chosen(self, event: Tree.NodeSelected) -> None:
        if event.node.data:
            if kind_of(event.node.data) == "table":
                self.open_table(event.node.data)
            else:
                self.open_file(event.node.data)

    def remember_buffer(self) -> None:
        """Keep the unsaved edit of the file being left (not for decision tables: read-only)."""
        if self.path is not None and kind_of(self.path) != "table":
            self.buffers[self.path] = self.query_one(ClipsEditor).text

    @work(exclusive=True, group="kb-open", exit_on_error=False)
    async def open_file(self, path: str) -> None:
        """Open `path` in the editor (unsaved edits of the file left are kept in memory)."""
        editor = self.query_one(ClipsEditor)
        self.remember_buffer()
        read = self.backend.read_scenario_file if kind_of(path) == "scenarios" else self.backend.read_kb_file
        if path not in self.saved_text:
            self.saved_text[path] = await self.call(f"read {path}", read, path, busy=editor)
        self.path, self.table_doc = path, None
        self.show_view("editor")
        self.located = []
        editor.read_only = False
        editor.load_text(self.buffers.get(path, self.saved_text[path]))
        editor.clear_markers()
        self._show_problems([])
        self._update_status()
        editor.focus()

    @property
    def modified(self) -> bool:
        if self.path is None or kind_of(self.path) == "table":
            return False
        return self.query_one(ClipsEditor).text != self.saved_text.get(self.path)

    @on(ClipsEditor.Changed)
    def _edited(self) -> None:
        if self.diagnostics and self.path is not None and not self.modified:
            self._show_problems([])  # back to the text on disk (undo): the draft's problems are not its problems
            return
        self._update_status()

    def update_status(self) -> None:
        self._update_status()

    def _update_status(self) -> None:
        if self.path is None:
            return
        if kind_of(self.path) == "table" and self.table_doc is not None:
            n, rows = len(self.located), max(len(self.table_doc.get("rows") or []) - 1, 0)
            rules = self.table_doc.get("rules", "").count("(defrule ")
            view = "cells" if self.query_one("#kb-view", ContentSwitcher).current == "kb-table" else "rules"
            problems = f"✗ {n} problem{'s' * (n != 1)}" if n else f"✓ {rules} rule{'s' * (rules != 1)}"
            self.query_one("#kb-status", Static).update(
                f"{escape(self.path)}  [dim]decision table · {rows} rows · {view}[/]  {problems}"
            )
            return
        n = len(self.diagnostics) + len(self.located)
        state = ("● draft, not saved" if self.path in self.buffers else "● modified") if self.modified else "saved"
        problems = f"✗ {n} problem{'s' * (n != 1)}" if n else "✓ no problems"
        self.query_one("#kb-status", Static).update(f"{escape(self.path)}  [dim]{state}[/]  {problems}")

    # ---- save and check --------------------------------------------------------------------
    def action_save(self) -> None:
        if self.path is None:
            self.notify("open a file first (pick one in the tree)", severity="warning")
            return
        kind = kind_of(self.path)
        if kind == "table":
            self.notify("decision tables are edited in a spreadsheet or text editor; f5 reads the file again")
        elif kind == "scenarios":
            self.save_scenarios()
        else:
            self.check_current(save=True)

    def action_check(self) -> None:
        if self.path is None:
            return
        kind = kind_of(self.path)
        if kind == "table":
            self.open_table(self.path)
        elif kind == "scenarios":
            self._yaml_problems(self.query_one(ClipsEditor).text, notify=True)
        else:
            self.check_current(save=False)

    def _yaml_problems(self, text: str, notify: bool = False) -> list[dict]:
        """A scenario file's YAML syntax errors, located (its scenarios are checked when they run)."""
        assert self.path is not None
        try:
            yaml.safe_load(text)
            found: list[dict] = []
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
            found = [{"file": self.path, "line": line, "column": col, "message": str(getattr(exc, "problem", exc))}]
        self._show_problems(found)
        if notify:
            self.notify(f"{len(found)} problem(s)" if found else "YAML ok", title=self.path)
        return found

    @work(exclusive=True, group="kb-check", exit_on_error=False)
    async def save_scenarios(self) -> None:
        """Write a scenario file when it is YAML (in-process only: the API serves them read-only)."""
        assert self.path is not None
        path, text = self.path, self.query_one(ClipsEditor).text
        if self.backend.remote:
            self.notify("scenario files are read-only when attached to a server", severity="warning")
            return
        if self._yaml_problems(text):
            self._refuse(path, text, self.diagnostics)
            return
        await self.call(f"save {path}", self.backend.write_kb_file, path, text)
        self.saved_text[path] = text
        self.buffers.pop(path, None)
        self._update_status()
        self.notify("saved; ctrl+r runs the scenarios", title=path)

    @work(exclusive=True, group="kb-check", exit_on_error=False)
    async def check_current(self, save: bool) -> None:
        """Check the editor's text; with `save`, write it when it is valid. Text with problems is never
        written over a valid file: it stays in the editor as a draft (over HTTP the server refuses it)."""
        assert self.path is not None
        path, text = self.path, self.query_one(ClipsEditor).text
        if save and not self.backend.validates_on_write:
            found = await self.call(f"check {path}", self.backend.check_kb, path, text)
            if found:
                saved = self.saved_text.get(path)
                saved_ok = saved is not None and not await self.call(
                    f"check {path}", self.backend.check_kb, path, saved
                )
                if saved_ok:
                    self._refuse(path, text, found)
                    return
        if save:
            try:
                await self.call(f"save {path}", self.backend.write_kb_file, path, text)
            except CallFailed as exc:
                refused = getattr(exc.__cause__, "diagnostics", [])
                if not refused:
                    raise
                self._refuse(path, text, refused)  # the server refused the rules: show where
                return
            self.saved_text[path] = text
            self.buffers.pop(path, None)
        if save and self.backend.validates_on_write:
            diagnostics: list[dict] = []  # the write was accepted, so the rules validated
        else:
            diagnostics = await self.call(f"check {path}", self.backend.check_kb, path, text)
        self._show_problems(diagnostics)
        if diagnostics:
            self.notify(f"{len(diagnostics)} problem(s); f8 jumps to the next", title=path, severity="warning")
        else:
            self.notify("saved, no problems" if save else "no problems", title=path)
        self.post_message(KnowledgeBaseChecked(path, diagnostics, save))

    def _refuse(self, path: str, text: str, diagnostics: list[dict]) -> None:
        """Not saved: keep the edit as a draft, show the problems, say so."""
        self.buffers[path] = text
        self._show_problems(diagnostics)
        self.notify(
            f"not saved: {len(diagnostics)} problem(s). The file on disk is unchanged; your edit is kept "
            "here as a draft — fix it and ctrl+s again (f8 jumps to the next problem).",
            title=path,
            severity="error",
            timeout=10,
        )
        self.post_message(KnowledgeBaseChecked(path, diagnostics, False))

    def _show_problems(self, diagnostics: list[dict]) -> None:
        self.diagnostics = diagnostics
        editor = self.query_one(ClipsEditor)
        editor.set_markers([Marker(int(d["line"]), int(d["column"]), d["message"]) for d in diagnostics])
        problems = self.query_one("#kb-problems", OptionList)
        problems.clear_options()
        for i, d in enumerate(diagnostics):
            problems.add_option(Option(Text(f"{d['line']}:{d['column']}  {d['message']}"), id=str(i)))
        problems.highlighted = 0 if diagnostics else None
        if diagnostics:
            self.query_one(TabbedContent).active = "tab-problems"
        self._update_status()

    @on(OptionList.OptionSelected, "#kb-problems")
    def _problem_chosen(self, event: OptionList.OptionSelected) -> None:
        if (event.option.id or "").startswith("located-"):
            return  # a decision table's problem: the message names row and column
        d = self.diagnostics[int(event.option.id or 0)]
        self.query_one(ClipsEditor).goto(int(d["line"]), int(d["column"]))

    def action_next_problem(self) -> None:
        """Move the cursor to the first problem after it (wrapping round)."""
        if not self.diagnostics:
            self.notify("no problems")
            return
        editor = self.query_one(ClipsEditor)
        row, col = editor.cursor_location
        ordered = sorted(self.diagnostics, key=lambda d: (d["line"], d["column"]))
        after = [d for d in ordered if (d["line"] - 1, d["column"] - 1) > (row, col)]
        target = (after or ordered)[0]
        editor.goto(int(target["line"]), int(target["column"]))
        self.notify(target["message"], title=f"{target['line']}:{target['column']}", timeout=4)

    def action_focus_tree(self) -> None:
        self.query_one(FileTree).focus()

    def action_new_file(self) -> None:
        """Ask for a name and create `NAME.clp` with a template to start from."""
        self.app.push_screen(PromptDialog("New rule file (name.clp)", placeholder="my_rules.clp"), self._create)

    def _create(self, name: str | None) -> None:
        if not name:
            return
        path = name if name.endswith(".clp") else f"{name}.clp"
        stem = path.rsplit("/", 1)[-1].removesuffix(".clp")
        starter = f"; {stem}: rules written in the Workbench TUI\n(deftemplate {stem}-fact (slot value))\n"
        self.create_file(path, starter)

    @work(exclusive=True, group="kb-new", exit_on_error=False)
    async def create_file(self, path: str, text: str) -> None:
        if path in self.saved_text or path in await self.call("list rule files", self.backend.list_kb_files):
            self.notify(f"{path} exists already", severity="warning")
            return
        await self.call(f"create {path}", self.backend.write_kb_file, path, text)
        self.saved_text[path] = text
        tree = self.query_one(FileTree)
        tree.set_paths(await self.call("list rule files", self.backend.list_kb_files))
        tree.select_path(path)
        self.open_file(path)

    # ---- run -------------------------------------------------------------------------------
    def action_run(self) -> None:
        if self.path is None:
            self.notify("open a file first (pick one in the tree)", severity="warning")
            return
        if kind_of(self.path) == "scenarios":
            self.run_tests(self.path)
            return
        if self.modified:
            self.notify("save first (ctrl+s): rules run from the saved files", severity="warning")
            return
        self.app.push_screen(FactsDialog(self.backend.kb_name_for(self.path), self.facts_text), self._run_requested)

    def _run_requested(self, request: RunRequest | None) -> None:
        if request is not None:
            self.facts_text = json.dumps(request.facts, indent=2)
            self.run_rules(request)

    @work(exclusive=True, group="kb-run", exit_on_error=False)
    async def run_rules(self, request: RunRequest) -> None:
        result = await self.call(
            f"run {request.knowledge_base}",
            self.backend.run_kb,
            request.knowledge_base,
            request.facts,
            busy=self.query_one(TabbedContent),
        )
        self.show_result(result)
        self.query_one("#kb-firings", DataTable).focus()  # read the firings; digits switch screens from here
        self.post_message(KnowledgeBaseRan(request.knowledge_base, result))

    def show_result(self, result: dict, switch: bool = True) -> None:
        """Fill the Firings, Memory and Output tabs from a forward-chaining result (`switch`: show Firings)."""
        self.last_result = result
        firings = self.query_one("#kb-firings", DataTable)
        firings.clear()
        for i, f in enumerate(result.get("firings", []), start=1):
            firings.add_row(str(i), f.get("rule", "?"), " ".join(f"f-{x}" for x in f.get("facts", [])))
        memory = self.query_one("#kb-memory", DataTable)
        memory.clear()
        for fact in result.get("facts", []):
            slots = fact.get("slots")
            shown = " ".join(f"({k} {_atom(v)})" for k, v in slots.items()) if isinstance(slots, dict) else _atom(slots)
            memory.add_row(f"f-{fact.get('id')}", str(fact.get("template", "")), shown)
        self.query_one("#kb-output", Static).update(
            escape(result.get("output") or "") or "[dim](the rules printed nothing)[/]"
        )
        if switch:
            self.query_one(TabbedContent).active = "tab-firings"
        self.notify(f"{len(result.get('firings', []))} firings, {len(result.get('facts', []))} facts in working memory")


def _atom(value) -> str:
    if isinstance(value, list):
        return " ".join(_atom(v) for v in value)
    if isinstance(value, str):
        return value
    return json.dumps(value)
