"""Decision tables: one rule per row of a `.csv` or `.xlsx` file, as in Drools' spreadsheets.

The first row is the header; each later row becomes a `defrule`. Columns:

- `name`: the rule's name (a CLIPS symbol, unique in the knowledge base); required.
- `salience` (optional): an integer.
- `if TEMPLATE.SLOT`: a condition on one fact of TEMPLATE; every `if` column of one template
  constrains the same fact. A cell is empty (any value), a value (equal), `OP value` with OP one
  of `< <= > >= != =`, or `in v1 v2 ...` (one of).
- `then TEMPLATE.SLOT`: a slot of one fact of TEMPLATE asserted by the row (one fact per template
  per row; a template whose `then` cells are all empty in a row is not asserted).

Templates come from the knowledge base's `.clp` files; every cell is checked against its slot's
declared type, allowed values and range. Errors are located as `file.csv:ROW:COL: message`
(1-based, the header is row 1). The generated CLIPS text goes through the same parser and
validator as a `.clp` file; `line_rows` maps its lines back to the table's rows.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, field
from pathlib import Path

from . import ast
from .errors import Diagnostic
from .facts import is_symbol_token, quote_string

TABLE_SUFFIXES = (".csv", ".xlsx")
OPERATORS = ("<=", ">=", "!=", "<", ">", "=")
_HEADER = re.compile(r"^\s*(if|then)\s+([^\s.]+)\.([^\s.]+)\s*$", re.IGNORECASE)
_INT = re.compile(r"^[+-]?\d+$")
_FLOAT = re.compile(r"^[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?$")
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_\-]*$")


def is_table(path: str | Path) -> bool:
    """True for a `.csv` or `.xlsx` file name."""
    return Path(path).suffix.lower() in TABLE_SUFFIXES


def read_rows(path: str | Path) -> list[list[str]]:
    """The table's cells as text, row by row (`.csv` as UTF-8; `.xlsx`: the first worksheet).

    Raises OSError / UnicodeDecodeError when the file cannot be read, ValueError for a
    workbook openpyxl cannot open.
    """
    path = Path(path)
    if path.suffix.lower() == ".xlsx":
        from openpyxl import load_workbook

        try:
            book = load_workbook(path, read_only=True, data_only=True)
        except OSError:
            raise
        except Exception as exc:  # openpyxl raises zipfile/KeyError/InvalidFileException kinds
            raise ValueError(f"not a readable .xlsx workbook ({type(exc).__name__}: {exc})") from None
        try:
            sheet = book.worksheets[0]
            rows = [[_cell_text(v) for v in row] for row in sheet.iter_rows(values_only=True)]
        finally:
            book.close()
        _refuse_uncomputed_formulas(path, rows)
        return rows
    return rows_of_csv(path.read_text(encoding="utf-8-sig"))


def rows_of_csv(text: str) -> list[list[str]]:
    """A `.csv` table's cells as text, row by row, from its text (a leading BOM is dropped)."""
    return [list(r) for r in csv.reader(io.StringIO(text.removeprefix("\ufeff")))]


class TableCellError(ValueError):
    """A cell the table cannot be read from; `row` and `column` are 1-based."""

    def __init__(self, row: int, column: int, message: str):
        self.row, self.column = row, column
        super().__init__(message)


def _refuse_uncomputed_formulas(path: Path, rows: list[list[str]]) -> None:
    """A formula cell saved without its computed value (e.g. a workbook written by a script) reads
    as empty, which in a table means "any value": refuse it rather than change the rule's meaning."""
    from openpyxl import load_workbook

    book = load_workbook(path, read_only=True, data_only=False)
    try:
        for r, row in enumerate(book.worksheets[0].iter_rows(values_only=True), start=1):
            for c, v in enumerate(row, start=1):
                if (
                    isinstance(v, str)
                    and v.startswith("=")
                    and not (rows[r - 1][c - 1] if c <= len(rows[r - 1]) else "")
                ):
                    raise TableCellError(
                        r, c, f"formula {v} has no computed value saved: open and save the workbook in a spreadsheet"
                    )
    finally:
        book.close()


def _cell_text(v: object) -> str:
    if v is None:
        return ""
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


@dataclass(slots=True)
class _Column:
    kind: str  # name | salience | if | then
    index: int
    template: str = ""
    slot: str = ""
    slot_def: ast.SlotDef | None = None


@dataclass(slots=True)
class GeneratedRules:
    """CLIPS text for a table, and for each of its lines (0-based) the table row it came from."""

    text: str
    line_rows: list[int] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)


def table_to_clips(
    filename: str, rows: list[list[str]], templates: dict[str, ast.TemplateDef], taken_names: set[str] = frozenset()
) -> GeneratedRules:
    """Translate a table's rows into `defrule`s over `templates` (by name).

    Returns the generated text with every problem found as located diagnostics (the text is
    empty when there are any). `taken_names`: rule names the other files already define.
    """
    out = GeneratedRules("")
    diags = out.diagnostics

    def err(row: int, col: int, message: str) -> None:
        diags.append(Diagnostic(filename, row, col, message))

    if not rows or not any(c.strip() for c in rows[0]):
        err(1, 1, "the first row must be the header (name, optional salience, if TEMPLATE.SLOT, then TEMPLATE.SLOT)")
        return out
    columns = _header(rows[0], templates, err)
    if diags:
        return out
    lines: list[str] = []
    names: set[str] = set()
    for r, row in enumerate(rows[1:], start=2):
        if not any(c.strip() for c in row):
            continue
        cells = row + [""] * (len(rows[0]) - len(row))
        for j in range(len(rows[0]), len(row)):
            if row[j].strip():
                err(r, j + 1, "a value beyond the last header column")
        rule = _row_rule(r, cells, columns, names | set(taken_names), err)
        if rule is None:
            continue
        names.add(rule[0])
        for line in rule[1]:
            lines.append(line)
            out.line_rows.append(r)
    if not diags:
        out.text = "\n".join(lines) + "\n"
    else:
        out.line_rows = []
    return out


def _header(header: list[str], templates: dict[str, ast.TemplateDef], err) -> list[_Column]:
    columns: list[_Column] = []
    seen: dict[str, int] = {}
    then_headers = 0  # then columns written in the header, valid or not
    for j, raw in enumerate(header):
        cell = raw.strip()
        col = j + 1
        key = cell.lower()
        if key in ("name", "salience"):
            if key in seen:
                err(1, col, f"column {key!r} appears twice (first in column {seen[key]})")
            seen[key] = col
            columns.append(_Column(key, j))
            continue
        m = _HEADER.match(cell)
        if not m:
            err(1, col, f"header {cell!r}: expected name, salience, 'if TEMPLATE.SLOT' or 'then TEMPLATE.SLOT'")
            continue
        kind, template, slot = m.group(1).lower(), m.group(2), m.group(3)
        then_headers += kind == "then"
        tdef = templates.get(template)
        if tdef is None:
            known = ", ".join(sorted(templates)) or "none"
            err(1, col, f"template {template!r} is not defined in the knowledge base's .clp files (defined: {known})")
            continue
        sdef = tdef.slots.get(slot)
        if sdef is None:
            err(1, col, f"template {template!r} has no slot {slot!r} (slots: {', '.join(tdef.slots) or 'none'})")
            continue
        if sdef.multislot and kind == "if":
            err(1, col, f"{template}.{slot} is a multislot: conditions on multislots are not supported in tables")
            continue
        dup = f"{kind} {template}.{slot}"
        if dup in seen:
            err(1, col, f"column {dup!r} appears twice (first in column {seen[dup]})")
        seen[dup] = col
        columns.append(_Column(kind, j, template, slot, sdef))
    if "name" not in seen:
        err(1, 1, "no 'name' column: each row needs a rule name")
    if not any(c.kind == "then" for c in columns) and not then_headers:  # else their own errors say why
        err(1, 1, "no 'then TEMPLATE.SLOT' column: rows would assert nothing")
    return columns


def _row_rule(r: int, cells: list[str], columns: list[_Column], taken: set[str], err):
    ok = True
    name = ""
    salience: int | None = None
    conditions: dict[str, list[str]] = {}
    actions: dict[str, list[str]] = {}
    var = 0
    for c in columns:
        text = cells[c.index].strip()
        col = c.index + 1
        if c.kind == "name":
            name = text
            if not text:
                err(r, col, "the rule name is empty")
                ok = False
            elif not _NAME.match(text):
                err(r, col, f"rule name {text!r}: letters, digits, '-' and '_' only, starting with a letter")
                ok = False
            elif text in taken:
                err(r, col, f"rule {text!r} is already defined")
                ok = False
            continue
        if c.kind == "salience":
            if text:
                if not _INT.match(text) or not -10000 <= int(text) <= 10000:
                    err(r, col, f"salience {text!r}: expected an integer from -10000 to 10000")
                    ok = False
                else:
                    salience = int(text)
            continue
        if not text:
            conditions.setdefault(c.template, []) if c.kind == "if" else None
            continue
        if c.kind == "if":
            var += 1
            constraint = _condition(text, c, f"?v{var}", lambda m, col=col: err(r, col, m))
            if constraint is None:
                ok = False
            else:
                conditions.setdefault(c.template, []).append(f"({c.slot} {constraint})")
        else:
            value = _action(text, c, lambda m, col=col: err(r, col, m))
            if value is None:
                ok = False
            else:
                actions.setdefault(c.template, []).append(f"({c.slot} {value})")
    if ok and not actions:
        err(r, 1, "the row has no 'then' value: it would assert nothing")
        ok = False
    if not ok:
        return None
    lines = [f"(defrule {name}  ; row {r}"]
    if salience is not None:
        lines.append(f"  (declare (salience {salience}))")
    for template, slots in conditions.items():
        lines.append(f"  ({template}{' ' if slots else ''}{' '.join(slots)})")
    lines.append("  =>")
    for template, slots in actions.items():
        lines.append(f"  (assert ({template} {' '.join(slots)}))")
    lines[-1] += ")"
    return name, lines


def _condition(text: str, c: _Column, var: str, err) -> str | None:
    where = f"{c.template}.{c.slot}"
    low = text.lower()
    if low.startswith("in ") or low == "in":
        parts = _values_of(text[2:])
        if not parts:
            err(f"{where}: 'in' needs at least one value")
            return None
        values = [_value(p, c, err) for p in parts]
        return None if any(v is None for v in values) else "|".join(values)  # type: ignore[arg-type]
    op = next((o for o in OPERATORS if text.startswith(o)), None)
    if op is None:
        return _value(text, c, err)
    rest = text[len(op) :].strip()
    if not rest:
        err(f"{where}: {op!r} needs a value after it")
        return None
    if op not in ("=", "!=") and c.slot_def is not None and set(c.slot_def.types) == {"STRING"}:
        err(f"{where}: {op} compares numbers; the slot accepts STRING")
        return None
    value = _value(rest, c, err)
    if value is None:
        return None
    if op == "=":
        return value
    if op == "!=":
        return f"~{value}"
    if not (_INT.match(rest) or _FLOAT.match(rest)):
        err(f"{where}: {op} compares numbers; {rest!r} is not a number")
        return None
    return f"{var}&:(and (numberp {var}) ({op} {var} {value}))"


_VALUE_TOKEN = re.compile(r'"(?:\\.|[^"\\])*"?|\S+')


def _values_of(text: str) -> list[str]:
    """Space-separated cell values; a quoted string keeps its spaces (`in "a b" c` is two values)."""
    return _VALUE_TOKEN.findall(text)


def _action(text: str, c: _Column, err) -> str | None:
    if text.startswith(OPERATORS) or text.lower().startswith("in "):
        err(
            f"{c.template}.{c.slot}: a 'then' cell is a value, not a condition ({text!r}); for text that starts "
            'like a condition, quote it as a CLIPS string ("..." inside the cell)'
        )
        return None
    if c.slot_def is not None and c.slot_def.multislot:
        values = [_value(p, c, err) for p in _values_of(text)]
        return None if any(v is None for v in values) else " ".join(values)  # type: ignore[arg-type]
    return _value(text, c, err)


def _value(text: str, c: _Column, err) -> str | None:
    """One cell value as CLIPS text, checked against the slot's type, allowed values and range."""
    sdef = c.slot_def
    where = f"{c.template}.{c.slot}"
    types = set(sdef.types) if sdef is not None else set()
    if text.startswith('"'):
        if len(text) < 2 or not text.endswith('"') or '"' in text[1:-1].replace('\\"', ""):
            err(f"{where}: unterminated or malformed string {text}")
            return None
        kind, literal, py = "STRING", text, text[1:-1]
    elif types == {"STRING"}:  # in a (type STRING) slot plain text is a string, `12.5` included (docs/rules.md)
        kind, literal, py = "STRING", quote_string(text), text
    elif _INT.match(text):
        kind, literal, py = "INTEGER", text, int(text)
    elif _FLOAT.match(text):
        kind, literal, py = "FLOAT", text, float(text)
    elif is_symbol_token(text):
        kind, literal, py = "SYMBOL", text, text
    else:
        err(f"{where}: {text!r} is not a CLIPS value (quote text with spaces or special characters)")
        return None
    if types:
        accepted = _accepted(types)
        if kind == "INTEGER" and "INTEGER" not in accepted and "FLOAT" in accepted:
            kind, literal, py = "FLOAT", f"{float(py)!r}", float(py)  # 3 in a FLOAT slot is 3.0, as CLIPS wants
        if kind not in accepted:
            err(f"{where}: {text!r} is a {kind}; the slot accepts {' '.join(sorted(types))}")
            return None
    if sdef is not None:
        allowed = sdef.allowed
        if allowed is not None and py not in allowed:
            err(f"{where}: {text!r} is not one of the allowed values {' '.join(str(a) for a in allowed)}")
            return None
        rng = sdef.range
        if rng is not None and isinstance(py, (int, float)):
            low, high = rng
            if (low is not None and py < low) or (high is not None and py > high):
                err(
                    f"{where}: {text} is outside the slot's range {low if low is not None else '?VARIABLE'}"
                    f"..{high if high is not None else '?VARIABLE'}"
                )
                return None
    return literal


def _accepted(types: set[str]) -> set[str]:
    out = set(types)
    if "NUMBER" in types:
        out |= {"INTEGER", "FLOAT"}
    if "LEXEME" in types:
        out |= {"SYMBOL", "STRING"}
    return out
