"""Rules screen: the files of `knowledge_bases/` as a tree, a CLIPS editor, check on save, run on facts."""

from __future__ import annotations

import json
from pathlib import Path

from rich.markup import escape
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import DataTable, OptionList, Static, TabbedContent, TabPane, Tree
from textual.widgets.option_list import Option

from ..messages import KnowledgeBaseChecked, KnowledgeBaseRan
from ..widgets.clips_editor import ClipsEditor, Marker
from ..widgets.file_tree import FileTree
from .base import CallFailed, WorkbenchScreen
from .dialogs import PromptDialog
from .facts_dialog import FactsDialog, RunRequest


class KnowledgeBaseScreen(WorkbenchScreen):
    """Browse, edit, check and run rule files."""

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
"""
    BINDINGS = [
        Binding("ctrl+s", "save", "Save+check"),
        Binding("f5", "check", "Check"),
        Binding("ctrl+r", "run", "Run"),
        Binding("f8", "next_problem", "Next error"),
        Binding("ctrl+t", "focus_tree", "Files"),
        Binding("ctrl+n", "new_file", "New file"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.path: str | None = None
        self.saved_text: dict[str, str] = {}
        self.buffers: dict[str, str] = {}  # unsaved edits per file, kept when switching files
        self.diagnostics: list[dict] = []
        self.facts_text = "[]"
        self.last_result: dict | None = None

    def body(self) -> ComposeResult:
        with Horizontal():
            with Vertical(classes="sidebar"):
                yield Static("Knowledge bases", classes="pane-title")
                yield FileTree(id="kb-tree")
            with Vertical(id="kb-main"):
                yield Static("no file open", id="kb-status", classes="pane-title")
                yield ClipsEditor(id="kb-editor", read_only=True)
                with TabbedContent(id="kb-tabs"):
                    with TabPane("Problems", id="tab-problems"):
                        yield OptionList(id="kb-problems")
                    with TabPane("Firings", id="tab-firings"):
                        yield DataTable(id="kb-firings", cursor_type="row")
                    with TabPane("Memory", id="tab-memory"):
                        yield DataTable(id="kb-memory", cursor_type="row")
                    with TabPane("Output", id="tab-output"):
                        yield Static(id="kb-output")

    def on_mount(self) -> None:
        self.query_one("#kb-firings", DataTable).add_columns("#", "Rule", "Facts")
        self.query_one("#kb-memory", DataTable).add_columns("Id", "Template", "Slots")
        self.load_files()

    # ---- files ------------------------------------------------------------------------------
    @work(exclusive=True, group="kb-files", exit_on_error=False)
    async def load_files(self) -> None:
        tree = self.query_one(FileTree)
        paths = await self.call("list rule files", self.backend.list_kb_files, busy=tree)
        tree.set_paths(paths)
        tree.focus()

    @on(Tree.NodeSelected, "#kb-tree")
    def _file_chosen(self, event: Tree.NodeSelected) -> None:
        if event.node.data:
            self.open_file(event.node.data)

    @work(exclusive=True, group="kb-open", exit_on_error=False)
    async def open_file(self, path: str) -> None:
        """Open `path` in the editor (unsaved edits of the file left are kept in memory)."""
        editor = self.query_one(ClipsEditor)
        if self.path is not None:
            self.buffers[self.path] = editor.text
        if path not in self.saved_text:
            self.saved_text[path] = await self.call(f"read {path}", self.backend.read_kb_file, path, busy=editor)
        self.path = path
        editor.read_only = False
        editor.load_text(self.buffers.get(path, self.saved_text[path]))
        editor.clear_markers()
        self._show_problems([])
        self._update_status()
        editor.focus()

    @property
    def modified(self) -> bool:
        return self.path is not None and self.query_one(ClipsEditor).text != self.saved_text.get(self.path)

    @on(ClipsEditor.Changed)
    def _edited(self) -> None:
        self._update_status()

    def _update_status(self) -> None:
        if self.path is None:
            return
        n = len(self.diagnostics)
        state = ("● draft, not saved" if self.path in self.buffers else "● modified") if self.modified else "saved"
        problems = f"✗ {n} problem{'s' * (n != 1)}" if n else "✓ no problems"
        self.query_one("#kb-status", Static).update(f"{escape(self.path)}  [dim]{state}[/]  {problems}")

    # ---- save and check --------------------------------------------------------------------
    def action_save(self) -> None:
        if self.path is None:
            self.notify("open a file first (pick one in the tree)", severity="warning")
            return
        self.check_current(save=True)

    def action_check(self) -> None:
        if self.path is not None:
            self.check_current(save=False)

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

    def show_result(self, result: dict) -> None:
        """Fill the Firings, Memory and Output tabs from a forward-chaining result."""
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
        self.query_one(TabbedContent).active = "tab-firings"
        self.notify(f"{len(result.get('firings', []))} firings, {len(result.get('facts', []))} facts in working memory")


def _atom(value) -> str:
    if isinstance(value, list):
        return " ".join(_atom(v) for v in value)
    if isinstance(value, str):
        return value
    return json.dumps(value)
