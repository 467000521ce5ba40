"""`NodeForm`: edit one pipeline node's properties (id, type, and the fields of its type).

Field lists come from the backend (`Backend.node_types()`: the pipeline spec in-process,
`GET /v1/node-types` over HTTP, so this module imports nothing of `workbench`); values are
typed as YAML flow text (`[a, b]`, `{pixels: input.pixels}`, `0.5`), the notation of the
pipeline files, and parsed on accept. Problems found by validation are shown at their field.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import yaml
from rich.markup import escape
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Input, Label, Select, Static


class Fields(VerticalScroll, can_focus=False):
    """A scrolling column of form rows that is never a Tab stop of its own (its inputs are)."""


def to_text(value: Any) -> str:
    """A node field value as one line of YAML flow text ('' for missing)."""
    if value is None:
        return ""
    if isinstance(value, str):
        # plain strings stay unquoted unless YAML would read them as something else
        return (
            value
            if yaml.safe_load(value) == value and "\n" not in value
            else yaml.safe_dump(value, default_flow_style=True, width=math.inf).strip().removesuffix("\n...")
        )
    return yaml.safe_dump(value, default_flow_style=True, width=math.inf, sort_keys=False).strip()


def from_text(field: str, text: str) -> Any:
    """Parse one field's YAML flow text; ValueError names the field."""
    if not text.strip():
        return None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at column {mark.column + 1}" if mark is not None else ""
        raise ValueError(f"field {field!r}{where}: not valid YAML ({getattr(exc, 'problem', exc)})") from exc


class NodeForm(ModalScreen[dict | None]):
    """Modal form for one node; Ctrl+S accepts (returns the node dict), Esc cancels."""

    BINDINGS = [Binding("ctrl+s", "accept", "Apply", priority=True), Binding("escape", "cancel", "Cancel")]
    CSS_PATH = Path(__file__).with_name("node_form.tcss")

    def __init__(
        self,
        node: dict[str, Any],
        issues: list[dict] | None = None,
        *,
        title: str = "Edit node",
        node_types: dict[str, Any],
    ) -> None:
        super().__init__()
        self.node = dict(node)
        self.issues = issues or []
        self.title_text = title
        self.common = [f for f in node_types.get("common", []) if f not in ("id", "type")]
        self.types = {t["type"]: t for t in node_types.get("types", [])}

    def fields(self) -> list[str]:
        kind = self.node.get("type", "rules")
        return [*self.common, *self.types.get(kind, {}).get("fields", [])]

    def compose(self) -> ComposeResult:
        with Fields(id="node-box"):
            yield Static(
                f"[b]{escape(self.title_text)}[/b] — ctrl+s apply · esc cancel · fields are YAML", id="node-title"
            )
            yield Static("", id="node-issues")
            with Horizontal(classes="form-row"):
                yield Label("id *")
                yield Input(str(self.node.get("id", "")), id="f-id")
            with Horizontal(classes="form-row"):
                yield Label("type *")
                yield Select(
                    [(t, t) for t in self.types], value=self.node.get("type", "rules"), allow_blank=False, id="f-type"
                )
            yield Fields(id="node-fields")

    async def on_mount(self) -> None:
        await self._build_fields()
        self._show_issues()
        self.query_one("#f-id", Input).focus()

    async def _build_fields(self) -> None:
        box = self.query_one("#node-fields", Fields)
        await box.remove_children()
        required = self.types.get(self.node.get("type", ""), {}).get("required", [])
        rows = []
        for name in self.fields():
            row = Horizontal(
                Label(f"{name}{' *' if name in required else ''}"),
                Input(to_text(self.node.get(name)), id=f"f-{name}", placeholder="(unset)"),
                classes="form-row",
            )
            rows.append(row)
        await box.mount_all(rows)

    def _show_issues(self) -> None:
        lines = [f"[red]✗ {escape(str(i.get('field') or '-'))}: {escape(str(i['message']))}[/]" for i in self.issues]
        self.query_one("#node-issues", Static).update("\n".join(lines))
        self.query_one("#node-issues", Static).display = bool(lines)
        for issue in self.issues:
            head = str(issue.get("field") or "").split(".")[0].split("[")[0]
            for widget in self.query(f"#f-{head}") if head else ():
                widget.add_class("-problem")
                widget.tooltip = issue["message"]

    @on(Select.Changed, "#f-type")
    async def _type_changed(self, event: Select.Changed) -> None:
        if event.value != self.node.get("type"):
            self.node.update(self._read(partial=True))
            self.node["type"] = event.value
            await self._build_fields()

    def _read(self, partial: bool = False) -> dict[str, Any]:
        node: dict[str, Any] = {}
        for name in ("id", *self.fields()):
            matches = self.query(f"#f-{name}")
            if not matches:
                continue
            text = matches.first(Input).value
            try:
                value = text.strip() if name == "id" else from_text(name, text)
            except ValueError:
                if partial:
                    continue
                raise
            if value not in (None, ""):
                node[name] = value
        return node

    def action_accept(self) -> None:
        try:
            node = self._read()
        except ValueError as exc:
            self.notify(str(exc), severity="error")
            return
        if not node.get("id"):
            self.notify("field 'id': a node needs an id (letters, digits, _)", severity="error")
            return
        node["type"] = self.query_one("#f-type", Select).value
        kind_fields = self.types.get(node["type"], {}).get("fields", [])
        ordered = {k: node[k] for k in ("id", "type", *self.common, *kind_fields) if k in node}
        self.dismiss(ordered)

    def action_cancel(self) -> None:
        self.dismiss(None)
