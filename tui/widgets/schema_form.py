"""`SchemaForm`: input fields built from a JSON Schema (the pipeline input node's `schema`).

Scalars get typed inputs (string, number, integer), booleans a switch, enums a select;
arrays and objects are typed as JSON. `value()` returns the input object or raises
ValueError naming the field.
"""

from __future__ import annotations

import json
from typing import Any

from textual.containers import Horizontal, VerticalScroll
from textual.widgets import Input, Label, Select, Switch


def _kind(spec: dict[str, Any]) -> str:
    kind = spec.get("type", "string")
    if isinstance(kind, list):  # e.g. [integer, "null"]
        kind = next((k for k in kind if k != "null"), "string")
    return str(kind)


class SchemaForm(VerticalScroll, can_focus=False):
    """One row per property of an object schema; required properties are marked `*`. The form itself
    is never a tab stop (only its fields are): an invisible stop would swallow the first tab."""

    DEFAULT_CSS = """
    SchemaForm { height: auto; max-height: 12; }
    SchemaForm .form-row { height: 3; }
    SchemaForm .form-row Label { width: 18; padding: 1 1 0 0; }
    SchemaForm .form-row Input, SchemaForm .form-row Select { width: 1fr; }
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.schema: dict[str, Any] = {}

    def build(self, schema: dict[str, Any] | None, values: dict[str, Any] | None = None) -> None:
        """Replace the fields with those of `schema`, prefilled from `values`."""
        self.schema = schema or {"type": "object", "properties": {}}
        values = values or {}
        self.remove_children()
        required = set(self.schema.get("required", []))
        rows = []
        for name, spec in (self.schema.get("properties") or {}).items():
            label = Label(f"{name}{' *' if name in required else ''}")
            kind, current = _kind(spec), values.get(name, spec.get("default"))
            if "enum" in spec:
                widget: Any = Select(
                    [(str(v), json.dumps(v)) for v in spec["enum"]],
                    id=f"in-{name}",
                    value=json.dumps(current) if current is not None else Select.NULL,
                )
            elif kind == "boolean":
                widget = Switch(bool(current), id=f"in-{name}")
            else:
                text = (
                    ""
                    if current is None
                    else (current if kind == "string" and isinstance(current, str) else json.dumps(current))
                )
                restrict = {"number": "number", "integer": "integer"}.get(kind, "text")
                hint = spec.get("description") or (kind if name in required else f"{kind}, optional")
                widget = Input(text, id=f"in-{name}", type=restrict, placeholder=hint)
            rows.append(Horizontal(label, widget, classes="form-row"))
        if not rows:
            rows.append(Label("(this pipeline's input schema has no properties)"))
        self.mount_all(rows)

    def value(self) -> dict[str, Any]:
        """The input object. Raises ValueError("field 'x': ...") for a bad or missing value."""
        out: dict[str, Any] = {}
        required = set(self.schema.get("required", []))
        for name, spec in (self.schema.get("properties") or {}).items():
            widget = self.query_one(f"#in-{name}")
            kind = _kind(spec)
            if isinstance(widget, Switch):
                out[name] = widget.value
                continue
            if isinstance(widget, Select):
                if widget.value is Select.NULL:
                    if name in required:
                        raise ValueError(f"field {name!r}: choose one of {', '.join(map(str, spec['enum']))}")
                    continue
                out[name] = json.loads(str(widget.value))
                continue
            text = widget.value.strip()
            if not text:
                if name in required:
                    raise ValueError(f"field {name!r}: required")
                continue
            if kind == "string":
                out[name] = text
                continue
            try:
                out[name] = json.loads(text)
            except json.JSONDecodeError as exc:
                raise ValueError(f"field {name!r}: not valid JSON at column {exc.colno}: {exc.msg}") from exc
        return out
