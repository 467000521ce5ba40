"""Raw clipspy as the oracle for forward-chaining semantics (no Workbench code on this path).

`run_raw` loads a .clp file with clipspy's own `Environment.load`, turns on CLIPS's
`(watch rules)`, asserts the facts as CLIPS text, runs, and returns what CLIPS printed,
the firings read from the watch lines with a regular expression over the whole text, and the
final working memory as CLIPS's own `(facts)` command prints it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import clips

PROGRAMS = Path(__file__).resolve().parents[1] / "programs"
FIRE_RE = re.compile(r"FIRE +\d+ (\S+): ([^\n]*)\n")
FACT_LINE_RE = re.compile(r"^f-(\d+)\s+(.*)$")


def py_score(income, debt):
    return (income - debt) / income


def py_label(name, score):
    return f"{name}:{score:.2f}"


FUNCTIONS = {"py-score": py_score, "py-label": py_label}


class _Capture(clips.Router):
    def __init__(self, names, name, priority):
        super().__init__(name, priority)
        self.names = names
        self.text: list[str] = []

    def query(self, name):
        return name in self.names

    def write(self, name, message):
        self.text.append(message)


@dataclass
class RawRun:
    output: str
    firings: list[tuple[str, tuple[int, ...]]]
    facts: dict[int, str]
    messages: str


@dataclass
class Program:
    path: Path
    strategy: str = "depth"
    seed: int | None = None
    facts: list | None = None
    functions: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return self.path.stem


def program(path: Path) -> Program:
    """Read the `; strategy:`, `; seed:`, `; facts:` and `; functions:` header lines."""
    p = Program(path)
    for line in path.read_text().splitlines():
        m = re.match(r";\s*(strategy|seed|facts|functions):\s*(.*)$", line)
        if not m:
            continue
        key, value = m.groups()
        if key == "strategy":
            p.strategy = value.strip()
        elif key == "seed":
            p.seed = int(value)
        elif key == "facts":
            p.facts = json.loads(value)
        else:
            p.functions = tuple(value.split())
    return p


def all_programs() -> list[Program]:
    return [program(p) for p in sorted(PROGRAMS.glob("*.clp"))]


def clips_text(fact: dict) -> str:
    """CLIPS source text of a JSON fact (symbols bare, as the corpus uses only symbol tokens)."""

    def val(v):
        if isinstance(v, list):
            return " ".join(val(x) for x in v)
        return str(v)

    if "values" in fact:
        return "(" + " ".join([fact["template"], *(val(v) for v in fact["values"])]) + ")"
    slots = " ".join(f"({k} {val(v)})".replace(" )", ")") for k, v in fact["slots"].items())
    return f"({fact['template']} {slots})"


def run_raw(prog: Program, strategy: str | None = None) -> RawRun:
    env = clips.Environment()
    out = _Capture(("stdout",), "oracle-out", 45)
    msg = _Capture(("stderr", "stdwrn"), "oracle-msg", 20)
    env.add_router(out)
    env.add_router(msg)
    for name in prog.functions:
        env.define_function(FUNCTIONS[name], name)
    env.load(str(prog.path))
    env.eval("(watch rules)")
    env.strategy = clips.Strategy[(strategy or prog.strategy).upper()]
    if prog.seed is not None:
        env.eval(f"(seed {prog.seed})")
    env.reset()
    for f in prog.facts or []:
        env.assert_string(clips_text(f))
    out.text.clear()
    env.run()
    text = "".join(out.text)
    firings = [
        (m.group(1), tuple(int(x[2:]) for x in m.group(2).split(",") if x.startswith("f-")))
        for m in FIRE_RE.finditer(text)
    ]
    output = FIRE_RE.sub("", text)
    env.eval("(unwatch all)")
    out.text.clear()
    env.eval("(facts *)")  # every module's facts
    facts: dict[int, str] = {}
    for line in "".join(out.text).splitlines():
        m = FACT_LINE_RE.match(line)
        if m:
            facts[int(m.group(1))] = " ".join(m.group(2).split())
    return RawRun(output, firings, facts, "".join(msg.text))


def render(fact) -> str:
    """CLIPS's printed form of one of our `Fact` values (for comparing working memories)."""
    from rules.facts import IMPLIED, String

    def val(v):
        if isinstance(v, tuple):
            return " ".join(val(x) for x in v)
        if isinstance(v, String):
            return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
        if isinstance(v, float):
            return repr(v)
        return str(v)

    if set(fact.slots) == {IMPLIED}:
        vals = val(fact.slots[IMPLIED])
        return f"({fact.template} {vals})" if vals else f"({fact.template})"
    parts = []
    for k, v in fact.slots.items():
        s = val(v)
        parts.append(f"({k} {s})" if s else f"({k})")
    return f"({fact.template} {' '.join(parts)})"
