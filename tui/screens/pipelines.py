"""Pipelines screen: list pipelines and versions, draw the DAG, edit nodes and edges, validate, save."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from rich.markup import escape
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, ScrollableContainer, Vertical
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from ..messages import PipelineSaved
from ..widgets.dag_view import DagView
from .base import CallFailed, WorkbenchScreen
from .dialogs import ChoiceDialog, PromptDialog
from .graph_edits import History, acyclic_targets, gate_branches, node_type
from .node_form import NodeForm, to_text

ALWAYS = "\x00always"  # the branch choice "no branch: always enabled"
OTHER = "\x00other"  # the branch choice "type another name"


class PipelinesScreen(WorkbenchScreen):
    """Build and version pipelines."""

    MODE = "pipelines"
    #: Focus goes here when the screen opens (before its first load marks it loading; see WorkbenchScreen.call).
    AUTO_FOCUS = "#pl-list"
    HOME = "#pl-list"
    TITLE = "Pipelines"
    CSS_PATH = Path(__file__).with_name("pipelines.tcss")
    HELP = """\
Pick a pipeline (Enter) or make one (**n**). In the graph, **↑/↓** select a node, **Enter**
edits its properties, **a** adds a node after it, **d** deletes it, **c** connects it to
another node (only nodes that keep the graph acyclic are offered; an edge out of a gate asks
for its branch), **x** removes one of its edges, **ctrl+z** undoes the last graph edit. **v**
validates (problems name the node; Enter on a problem opens that node), **ctrl+s** saves the
document as a new version. Versions are listed under the pipelines (newest first, with their
stages): Enter loads one, **p** points the `production` or `staging` stage at the highlighted
one (rollback is promoting an older one).
"""
    # footer order = what fits first at 80 columns: the document's actions, then graph edits
    BINDINGS = [
        Binding("v", "validate", "Validate"),
        Binding("ctrl+s", "save", "Save version"),
        Binding("p", "promote", "Promote"),
        Binding("n", "new", "New"),
        Binding("a", "add_node", "Add"),
        Binding("c", "connect", "Connect"),
        Binding("ctrl+z", "undo", "Undo"),
        Binding("x", "disconnect", "Disconnect"),
        Binding("d,delete", "delete_node", "Delete"),
        Binding("enter,e", "edit_node", "Edit", show=False),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.doc: dict[str, Any] | None = None
        self.version: str | None = None
        self.dirty = False
        self.issues: list[dict] = []
        self.history = History()
        self.node_types: dict[str, Any] | None = None

    def body(self) -> ComposeResult:
        with Horizontal():
            with Vertical(classes="sidebar"):
                yield Static("Pipelines", classes="pane-title")
                yield OptionList(id="pl-list")
                yield Static("Versions", classes="pane-title")
                yield OptionList(id="pl-versions")
            with Vertical(id="pl-main"):
                yield Static(
                    "no pipeline open — Enter on one, or n for a new one", id="pl-status", classes="pane-title"
                )
                with ScrollableContainer(id="pl-graph"):
                    yield DagView(id="pl-dag")
                yield Static("", id="pl-node")
                yield OptionList(id="pl-problems")

    def on_mount(self) -> None:
        self.query_one("#pl-problems").display = False
        self.load_list()

    # ---- list and versions -----------------------------------------------------------------
    @work(exclusive=True, group="pl-list", exit_on_error=False)
    async def load_list(self, select: str | None = None) -> None:
        listing = self.query_one("#pl-list", OptionList)
        rows = await self.call("list pipelines", self.backend.list_pipelines, busy=listing)
        listing.clear_options()
        for row in rows:
            listing.add_option(Option(Text(row["name"]), id=row["name"]))
        chosen = next((i for i, r in enumerate(rows) if r["name"] == select), None) if select is not None else None
        listing.highlighted = chosen if chosen is not None else (0 if rows else None)
        if self.node_types is None:
            self.node_types = await self.call("node types", self.backend.node_types)

    @on(OptionList.OptionSelected, "#pl-list")
    def _pipeline_chosen(self, event: OptionList.OptionSelected) -> None:
        self.open_pipeline(str(event.option.id))

    @on(OptionList.OptionSelected, "#pl-versions")
    def _version_chosen(self, event: OptionList.OptionSelected) -> None:
        if self.doc is not None:
            self.open_pipeline(self.doc["name"], str(event.option.id))

    @work(exclusive=True, group="pl-open", exit_on_error=False)
    async def open_pipeline(self, name: str, version: str | None = None) -> None:
        """Load a pipeline (its default version, or `version`) into the graph."""
        if self.dirty and self.doc is not None and self.doc.get("name") != name:
            self.notify(f"unsaved changes to {self.doc['name']} were discarded", severity="warning")
        graph = self.query_one("#pl-graph")
        try:
            doc = await self.call(f"open {name}", self.backend.get_pipeline, name, version, busy=graph)
            versions = await self.call(f"versions of {name}", self.backend.pipeline_versions, name)
        except CallFailed as exc:  # the whole reason, wrapped, where the node details go
            self.query_one("#pl-node", Static).update(f"[b red]could not open {escape(name)}:[/] {escape(str(exc))}")
            raise
        self.doc, self.dirty, self.issues = doc, False, []
        self.history.clear()
        self.version = version or (versions[0]["version"] if versions else None)
        self._fill_versions(versions)
        self._refresh()
        self.query_one(DagView).focus()

    def _fill_versions(self, versions: list[dict]) -> None:
        box = self.query_one("#pl-versions", OptionList)
        box.clear_options()
        for v in versions:
            stages = ",".join(v.get("stages") or [])
            label = f"{v['version'][:10]} {stages}".rstrip()
            box.add_option(Option(label, id=v["version"]))
        if not versions:
            box.add_option(Option("(none stored yet)", id="-", disabled=True))
        box.highlighted = 0 if versions else None  # the newest: the first enter or p acts on it

    # ---- drawing ---------------------------------------------------------------------------
    def _refresh(self) -> None:
        if self.doc is None:
            return
        bad = {i["node"] for i in self.issues if i.get("node")}
        dag = self.query_one(DagView)
        dag.show(self.doc, bad)
        self._update_status()
        self._show_node(dag.selected)
        problems = self.query_one("#pl-problems", OptionList)
        problems.clear_options()
        for k, issue in enumerate(self.issues):
            where = (
                f"{issue['node']}.{issue.get('field') or ''}"
                if issue.get("node")
                else (issue.get("field") or "pipeline")
            )
            problems.add_option(Option(Text(f"✗ {where}: {issue['message']}"), id=str(k)))
        problems.highlighted = 0 if self.issues else None
        problems.display = bool(self.issues)

    def _update_status(self) -> None:
        assert self.doc is not None
        parts = [f"[b]{escape(str(self.doc.get('name', '?')))}[/b]"]
        if self.version:
            parts.append(f"v {self.version[:10]}")
        if self.dirty:
            parts.append("[yellow]● modified[/]")
        if self.issues:
            parts.append(f"[red]✗ {len(self.issues)} problem(s)[/]")
        self.query_one("#pl-status", Static).update("  ".join(parts))

    @on(DagView.NodeHighlighted)
    def _node_highlighted(self, event: DagView.NodeHighlighted) -> None:
        self._show_node(event.node_id)

    def _show_node(self, node_id: str | None) -> None:
        node = self._node(node_id)
        if node is None:
            self.query_one("#pl-node", Static).update("")
            return
        fields = [f"{k}={to_text(v)}" for k, v in node.items() if k not in ("id", "type")]
        ins = [e["from"] for e in self.doc["edges"] if e.get("to") == node_id]  # type: ignore[index]
        outs = [
            e["to"] + (f" (when {e['when']})" if e.get("when") else "")
            for e in self.doc["edges"]
            if e.get("from") == node_id
        ]  # type: ignore[index]
        text = (
            f"[b]{escape(node_id)}[/b] · {escape(str(node.get('type')))}  ← {escape(', '.join(ins) or '-')}"
            f"  → {escape(', '.join(outs) or '-')}\n[dim]{escape('  '.join(fields))}[/]"
        )
        self.query_one("#pl-node", Static).update(text)

    def _node(self, node_id: str | None) -> dict | None:
        if self.doc is None or node_id is None:
            return None
        return next((n for n in self.doc["nodes"] if n.get("id") == node_id), None)

    def _changed(self) -> None:
        self.dirty = True
        self._refresh()

    def _before_edit(self, what: str) -> None:
        """Remember the document as it is, so that ctrl+z undoes the edit about to happen."""
        if self.doc is not None:
            self.history.push(self.doc, what)

    def action_undo(self) -> None:
        step = self.history.undo()
        if step is None:
            self.notify("nothing to undo", severity="warning")
            return
        self.doc, what = step
        dag = self.query_one(DagView)
        if dag.selected not in {n["id"] for n in self.doc["nodes"]}:
            dag.selected = None
        self._changed()
        self.notify(f"undid: {what}")

    def _with_node_types(self, then) -> None:
        """Run `then(node_types)` once the backend's node types are known (fetched on first use)."""
        if self.node_types is not None:
            then(self.node_types)
        else:
            self._fetch_node_types(then)

    @work(exclusive=True, group="pl-types", exit_on_error=False)
    async def _fetch_node_types(self, then) -> None:
        self.node_types = await self.call("node types", self.backend.node_types)
        then(self.node_types)

    def _ask_branch(self, gate: str, target: str, then) -> None:
        """An edge out of a gate: choose one of the gate's branch names, no branch, or type another."""
        assert self.doc is not None
        options = [(b, f"when {b}") for b in gate_branches(self.doc, gate)]
        options += [(ALWAYS, "(always — no branch)"), (OTHER, "another branch name…")]

        def chosen(key: str | None) -> None:
            if key is None:
                return
            if key == OTHER:
                self.app.push_screen(
                    PromptDialog(f"Branch name for {gate} → {target}", placeholder="e.g. assess"),
                    lambda name: name and then(name),
                )
            else:
                then(None if key == ALWAYS else key)

        self.app.push_screen(ChoiceDialog(f"Branch of {gate} for the edge to {target}", options), chosen)

    def _need_doc(self) -> bool:
        if self.doc is None:
            self.notify("open a pipeline first (Enter on one) or press n for a new one", severity="warning")
            return False
        return True

    # ---- editing ---------------------------------------------------------------------------
    def action_new(self) -> None:
        def create(name: str | None) -> None:
            if not name:
                return
            self.doc = {"name": name, "nodes": [{"id": "input", "type": "input"}], "edges": []}
            self.version, self.issues = None, []
            self.history.clear()
            self._fill_versions([])
            self._changed()
            self.query_one(DagView).focus()

        self.app.push_screen(PromptDialog("New pipeline name", placeholder="letters, digits, _ - ."), create)

    def action_add_node(self) -> None:
        if not self._need_doc():
            return
        assert self.doc is not None
        after = self.query_one(DagView).selected
        taken = {n["id"] for n in self.doc["nodes"]}
        new_id = next(f"node{i}" for i in range(1, 10_000) if f"node{i}" not in taken)

        def insert(node: dict, when: str | None) -> None:
            assert self.doc is not None
            self._before_edit(f"add node {node['id']}")
            self.doc["nodes"].append(node)
            if after is not None:
                edge = {"from": after, "to": node["id"]}
                if when:
                    edge["when"] = when
                self.doc["edges"].append(edge)
            self.query_one(DagView).selected = node["id"]
            self._changed()

        def added(node: dict | None) -> None:
            if node is None or self.doc is None:
                return
            if node["id"] in {n["id"] for n in self.doc["nodes"]}:
                self.notify(f"node id {node['id']!r} is taken", severity="error")
                return
            if after is not None and node_type(self.doc, after) == "gate":
                self._ask_branch(after, node["id"], lambda when: insert(node, when))
            else:
                insert(node, None)

        title = f"Add node after {after}" if after else "Add node"
        self._with_node_types(
            lambda types: self.app.push_screen(
                NodeForm({"id": new_id, "type": "rules"}, title=title, node_types=types), added
            )
        )

    def action_edit_node(self) -> None:
        if not self._need_doc():
            return
        node = self._node(self.query_one(DagView).selected)
        if node is None:
            return
        old = node["id"]
        issues = [i for i in self.issues if i.get("node") == old]

        def edited(new: dict | None) -> None:
            if new is None or self.doc is None:
                return
            if new["id"] != old and new["id"] in {n["id"] for n in self.doc["nodes"]}:
                self.notify(f"node id {new['id']!r} is taken", severity="error")
                return
            self._before_edit(f"edit node {old}")
            self.doc["nodes"] = [new if n.get("id") == old else n for n in self.doc["nodes"]]
            for edge in self.doc["edges"]:
                for end in ("from", "to"):
                    if edge.get(end) == old:
                        edge[end] = new["id"]
            self.issues = [i for i in self.issues if i.get("node") != old]
            self.query_one(DagView).selected = new["id"]
            self._changed()

        self._with_node_types(
            lambda types: self.app.push_screen(
                NodeForm(copy.deepcopy(node), issues, title=f"Edit node {old}", node_types=types), edited
            )
        )

    def action_delete_node(self) -> None:
        if not self._need_doc():
            return
        assert self.doc is not None
        node_id = self.query_one(DagView).selected
        if node_id is None:
            return
        self._before_edit(f"delete node {node_id}")
        self.doc["nodes"] = [n for n in self.doc["nodes"] if n.get("id") != node_id]
        self.doc["edges"] = [e for e in self.doc["edges"] if node_id not in (e.get("from"), e.get("to"))]
        self.notify(f"removed node {node_id} and its edges")
        self._changed()

    def action_connect(self) -> None:
        if not self._need_doc():
            return
        assert self.doc is not None
        source = self.query_one(DagView).selected
        if source is None:
            return
        targets = [(t, f"{t} · {node_type(self.doc, t)}") for t in acyclic_targets(self.doc, source)]
        if not targets:
            self.notify(f"no node left that {source} can connect to without a cycle", severity="warning")
            return
        source_type = node_type(self.doc, source)

        def add_edge(target: str | None, when: str | None = None) -> None:
            if target is None or self.doc is None:
                return
            self._before_edit(f"connect {source} → {target}")
            edge = {"from": source, "to": target}
            if when:
                edge["when"] = when
            self.doc["edges"].append(edge)
            self._changed()

        def chosen(target: str | None) -> None:
            if target is not None and source_type == "gate":
                self._ask_branch(source, target, lambda when: add_edge(target, when))
            else:
                add_edge(target)

        self.app.push_screen(ChoiceDialog(f"Connect {source} to", targets), chosen)

    def action_disconnect(self) -> None:
        if not self._need_doc():
            return
        assert self.doc is not None
        node_id = self.query_one(DagView).selected
        edges = [
            (str(k), f"{e['from']} → {e['to']}" + (f" (when {e['when']})" if e.get("when") else ""))
            for k, e in enumerate(self.doc["edges"])
            if node_id in (e.get("from"), e.get("to"))
        ]
        if not edges:
            self.notify(f"{node_id} has no edges", severity="warning")
            return

        def chosen(key: str | None) -> None:
            if key is not None and self.doc is not None:
                edge = self.doc["edges"][int(key)]
                self._before_edit(f"remove edge {edge['from']} → {edge['to']}")
                del self.doc["edges"][int(key)]
                self._changed()

        self.app.push_screen(ChoiceDialog("Remove edge", edges), chosen)

    @on(OptionList.OptionSelected, "#pl-problems")
    def _problem_chosen(self, event: OptionList.OptionSelected) -> None:
        issue = self.issues[int(event.option.id or 0)]
        if issue.get("node") and self._node(issue["node"]) is not None:
            self.query_one(DagView).selected = issue["node"]
            self.action_edit_node()

    def action_promote(self) -> None:
        if not self._need_doc():
            return
        assert self.doc is not None
        box = self.query_one("#pl-versions", OptionList)
        option = box.highlighted_option if box.highlighted is not None else None
        if option is None or option.disabled:
            self.notify("highlight a stored version in the Versions list first", severity="warning")
            return
        version = str(option.id)
        self.app.push_screen(
            ChoiceDialog(f"Point a stage at {version[:10]}", [("production", "production"), ("staging", "staging")]),
            lambda stage: stage and self.promote(self.doc["name"], version, stage),
        )

    @work(exclusive=True, group="pl-promote", exit_on_error=False)
    async def promote(self, name: str, version: str, stage: str) -> None:
        full = await self.call(f"promote {name}", self.backend.promote_pipeline, name, version, stage)
        self._fill_versions(await self.call("versions", self.backend.pipeline_versions, name))
        self.notify(f"{stage} → {full[:10]}", title=name)

    # ---- validate and save -----------------------------------------------------------------
    def action_validate(self) -> None:
        if self._need_doc():
            self.validate()

    @work(exclusive=True, group="pl-validate", exit_on_error=False)
    async def validate(self) -> None:
        assert self.doc is not None
        self.issues = await self.call("validate", self.backend.validate_pipeline, copy.deepcopy(self.doc))
        self._refresh()
        if self.issues:
            self.notify(f"{len(self.issues)} problem(s): Enter on one opens its node", severity="warning")
            self.query_one("#pl-problems").focus()
        else:
            self.notify("valid")

    def action_save(self) -> None:
        if self._need_doc():
            self.save()

    @work(exclusive=True, group="pl-save", exit_on_error=False)
    async def save(self) -> None:
        """Validate, then store the document as a new version (nothing stored when invalid)."""
        assert self.doc is not None
        doc = copy.deepcopy(self.doc)
        self.issues = await self.call("validate", self.backend.validate_pipeline, doc)
        if self.issues:
            self._refresh()
            self.notify(f"not saved: {len(self.issues)} problem(s)", severity="error")
            return
        try:
            saved = await self.call("save version", self.backend.save_pipeline, doc)
        except CallFailed as exc:
            refused = getattr(exc.__cause__, "diagnostics", [])
            if not refused:
                raise
            self.issues = refused  # the server refused the document: show the problems at their nodes
            self._refresh()
            return
        self.version, self.dirty = saved["version"], False
        versions = await self.call("versions", self.backend.pipeline_versions, saved["name"])
        self._fill_versions(versions)
        self._refresh()
        what = "saved new version" if saved.get("created", True) else "unchanged; existing version"
        self.notify(f"{what} {saved['version'][:10]}", title=saved["name"])
        self.post_message(PipelineSaved(saved["name"], saved["version"], bool(saved.get("created", True))))
        self.load_list(select=saved["name"])
