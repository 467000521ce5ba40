"""Run-time state of one pipeline run: per-node states, the trace being recorded, versions used."""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from rules.facts import Fact, fact_key, to_json, value_key
from workbench.store import TraceEvent

from .schema import Compiled, compiled_schema
from .spec import Node, Pipeline

PENDING, SUCCEEDED, SKIPPED, FAILED = "pending", "succeeded", "skipped", "failed"


@dataclass(slots=True)
class NodeState:
    """What one node produced: `facts` (passed on along edges), `value` (read by expressions),
    `branches` (gates), timing in seconds, and a JSON-ready `record` for the explanation."""

    node: Node
    status: str = PENDING
    facts: list[Fact] = field(default_factory=list)
    value: Any = None
    branches: set[str] | None = None
    seconds: float = 0.0
    reason: str | None = None
    record: dict[str, Any] = field(default_factory=dict)
    wm: dict[int, Fact] = field(default_factory=dict)  # forward nodes: fact id -> fact (final + given)


@dataclass(slots=True)
class Plan:
    """What a run needs to know about the graph, computed once per pipeline version."""

    version: str
    generations: list[list[str]]
    ancestors: dict[str, set[str]]
    incoming: dict[str, list[Any]]
    outgoing: dict[str, list[Any]]
    memo: dict[Any, Any] = field(default_factory=dict)  # per-version derived data (e.g. templates read by outputs)

    @classmethod
    def build(cls, pipeline: Pipeline) -> Plan:
        import networkx as nx

        g = pipeline.graph
        order = {nid: i for i, nid in enumerate(pipeline.nodes)}
        return cls(
            version=pipeline.version,
            generations=[sorted(gen, key=order.__getitem__) for gen in nx.topological_generations(g)],
            ancestors={n: nx.ancestors(g, n) for n in g.nodes},
            incoming={n: pipeline.incoming(n) for n in pipeline.nodes},
            outgoing={n: pipeline.outgoing(n) for n in pipeline.nodes},
        )

    def schema_check(self, node: Node) -> Compiled | None:
        """`node`'s compiled JSON Schema (`schema.compiled_schema`; None without a schema), once per
        pipeline version: the plan is keyed by the pipeline's content (`Executor._plan`), so the
        schema's canonical JSON is no longer built per run to find its checks (two per `demo_digits`
        run, ~15 us each)."""
        key = ("schema", node.id)
        c = self.memo.get(key, self)
        if c is self:
            schema = node.get("schema")
            c = self.memo[key] = compiled_schema(schema) if schema else None
        return c


class RunContext:
    """Everything one run reads and writes. Not shared between runs."""

    def __init__(
        self,
        pipeline: Pipeline,
        inputs: dict[str, Any],
        *,
        base_dir: str | None = None,
        plan: Plan | None = None,
        explain: bool = False,
    ):
        self.pipeline = pipeline
        self.explain = explain  # the caller asked for the explanation: also compute the costlier parts (gate WHY NOT)
        self.cancel: Any = None  # the run's `chaining.forward.Cancellation`: rules and goal nodes stop on it
        self.plan = plan or Plan.build(pipeline)
        self.version = self.plan.version
        self.inputs = inputs
        self.base_dir = base_dir
        self.states: dict[str, NodeState] = {nid: NodeState(n) for nid, n in pipeline.nodes.items()}
        self.events: list[TraceEvent] = []
        self.t0 = time.perf_counter()
        self.kb_versions: dict[str, str] = {}
        self.model_versions: dict[str, str] = {}
        self._keys: dict[int, tuple] = {}
        self._same: dict[int, Fact] = {}  # id of a copy without a working-memory id -> the fact it copies
        self._texts: dict[int, str] = {}
        self._same_text: dict[int, Fact] = {}  # id of a fact -> a fact whose CLIPS text is certainly the same
        self._wm_ids: dict[str, dict[tuple, int]] = {}
        self._alive: list[Fact] = []
        self._emitted: dict[str, dict[tuple, Fact]] = {}
        self._asserted_by: dict[str, dict[int, dict[str, Any]]] = {}

    def event(self, kind: str, node: str | None, payload: dict[str, Any]) -> None:
        """Append a trace event stamped with seconds since the run started."""
        self.events.append(TraceEvent(kind, node, payload, time.perf_counter() - self.t0))

    def ancestors(self, node_id: str) -> set[str]:
        return self.plan.ancestors[node_id]

    def incoming(self, node_id: str) -> list[Any]:
        return self.plan.incoming[node_id]

    def outgoing(self, node_id: str) -> list[Any]:
        return self.plan.outgoing[node_id]

    def active(self, edge) -> bool:
        """An edge is active when its source succeeded and, for gate branches, its branch was selected."""
        src = self.states[edge.source]
        if src.status != SUCCEEDED:
            return False
        return edge.when is None or (src.branches is not None and edge.when in src.branches)

    def incoming_facts(self, node_id: str) -> list[Fact]:
        """Union of the facts on the active incoming edges, in edge order, duplicates dropped."""
        active = [e for e in self.plan.incoming[node_id] if self.active(e)]
        if len(active) == 1:
            return list(self.states[active[0].source].facts)
        seen: set[tuple] = set()
        out: list[Fact] = []
        for e in active:
            for f in self.states[e.source].facts:
                key = self.key(f)
                if key not in seen:
                    seen.add(key)
                    out.append(f)
        return out

    def key(self, f: Fact) -> tuple:
        """The fact's typed identity `rules.facts.fact_key(f)` (symbol `a` and string "a" differ),
        memoised for the run (facts are immutable and live as long as the run)."""
        k = self._keys.get(id(f))
        if k is None:
            original = self._same.get(id(f))  # a copy shares the key of the fact it copies
            k = self._keys[id(f)] = self.key(original) if original is not None else fact_key(f)
            self._alive.append(f)  # keep it alive so that id(f) stays unique during the run
        return k

    def same(self, a: Fact, b: Fact) -> bool:
        """`self.key(a) == self.key(b)` (typed content; ids ignored), mostly without building
        keys: slot values of the same type compare with `==` (a multifield element by element),
        anything else by `rules.facts.value_key`. When true, `a` shares `b`'s key from now on.
        Used for every given fact of every forward node (the working-memory copy read back from
        CLIPS against the fact given), where building both keys was a quarter of the pool's time."""
        if a is b:
            return True
        ka, kb = self._keys.get(id(a)), self._keys.get(id(b))
        if ka is not None and kb is not None:
            return ka == kb
        if a.template != b.template or a.slots.keys() != b.slots.keys():
            return False
        sb = b.slots
        exact = True  # every value the same type and `==`, no float zero: the CLIPS texts are the same too
        for name, x in a.slots.items():
            y = sb[name]
            t = type(x)
            if t is type(y) and x == y:
                if t is not tuple:
                    if t is float and x == 0.0:  # 0.0 == -0.0, but they read differently
                        exact = False
                    continue
                if all(type(p) is type(q) and type(p) is not tuple for p, q in zip(x, y)):
                    if 0.0 in x:  # a float zero (or an integer 0: any such tuple is left unshared)
                        exact = False
                    continue
            if value_key(x) != value_key(y):
                return False
            exact = False
        if ka is None:
            self._same[id(a)] = b
            self._alive.append(a)
        if exact and id(a) not in self._texts:
            self._same_text[id(a)] = b
            self._alive.append(a)
        return True

    def strip_ids(self, facts: Iterable[Fact]) -> list[Fact]:
        """Copies of facts without working-memory ids (facts move between knowledge bases by
        content). A copy shares its original's content (slots are not re-checked: they were when
        the original was made or read from CLIPS) and its key (`key`), computed at most once."""
        out: list[Fact] = []
        for f in facts:
            if f.id is not None:
                c = _copy_without_id(f)
                self._same[id(c)] = f
                self._same_text[id(c)] = f  # the same slots: the same text
                self._alive.append(c)
                f = c
            out.append(f)
        return out

    def wm_id(self, node_id: str, key: tuple) -> int | None:
        """Id of the first fact in forward node `node_id`'s working memory with content `key` (memoised index)."""
        index = self._wm_ids.get(node_id)
        if index is None:
            index = self._wm_ids[node_id] = {}
            for fid, f in self.states[node_id].wm.items():
                index.setdefault(self.key(f), fid)
        return index.get(key)

    def asserting_firing(self, node_id: str, fid: int) -> dict[str, Any] | None:
        """The last firing of forward node `node_id` that asserted fact `fid` (what made the fact as
        it is now), None if no firing did; an index per node, built once per run."""
        index = self._asserted_by.get(node_id)
        if index is None:
            index = self._asserted_by[node_id] = {}
            for fr in self.states[node_id].record.get("firings", []):
                for x in fr["asserted"]:
                    index[x] = fr  # a later firing replaces an earlier one
        return index.get(fid)

    def text(self, f: Fact) -> str:
        """The fact's CLIPS text (`str(f)`), rendered once per run (explanations show a fact many
        times), and shared with the fact it is a copy of: a copy without id (`strip_ids`), or a
        working-memory copy read back from CLIPS that `same` found equal value for value, same
        types, no float zero (0.0 == -0.0 but they read differently): the text is then the same."""
        t = self._texts.get(id(f))
        if t is None:
            original = self._same_text.get(id(f))
            t = self._texts[id(f)] = self.text(original) if original is not None else str(f)
            self._alive.append(f)
        return t

    def keys_of(self, node_id: str) -> dict[tuple, Fact]:
        """Content key -> fact of the facts a node emitted (memoised)."""
        m = self._emitted.get(node_id)
        if m is None:
            m = self._emitted[node_id] = {self.key(f): f for f in self.states[node_id].facts}
        return m

    def values_scope(self, node_id: str) -> dict[str, Any]:
        """`input` and the values of this node's ancestors that ran, by node id."""
        scope: dict[str, Any] = {"input": self.inputs}
        for a in self.ancestors(node_id):
            st = self.states[a]
            if st.status == SUCCEEDED and st.value is not None:
                scope[a] = st.value
        return scope

    def elapsed(self) -> float:
        return time.perf_counter() - self.t0


def strip_ids(facts: Iterable[Fact]) -> list[Fact]:
    """Copies of facts without working-memory ids (facts move between knowledge bases by content);
    outside a run (no `RunContext` to share keys with)."""
    return [_copy_without_id(f) if f.id is not None else f for f in facts]


def _copy_without_id(f: Fact) -> Fact:
    """`Fact(f.template, f.slots)` without re-running `Fact`'s checks on content that passed them
    (the slots mapping is shared: facts are immutable). The same shortcut the CLIPS fact reader
    takes for facts it reads (chaining/forward/clips_fact_reader.py)."""
    c = object.__new__(Fact)
    object.__setattr__(c, "template", f.template)
    object.__setattr__(c, "slots", f.slots)
    object.__setattr__(c, "id", None)
    return c


class FactScope:
    """Fact access for expressions: `prediction.label` (last fact of a template), `fact('t')`,
    `facts('t')`, `exists('t')`, `count('t')`."""

    __slots__ = ("by_template",)

    def __init__(self, facts: Iterable[Fact]):
        self.by_template: dict[str, list[Fact]] = {}
        for f in facts:
            self.by_template.setdefault(f.template, []).append(f)

    def view(self, template: str) -> FactView | None:
        fs = self.by_template.get(template)
        return FactView(fs[-1]) if fs else None

    def functions(self) -> dict[str, Any]:
        return {
            "fact": self.view,
            "facts": lambda t: [plain_slots(f) for f in self.by_template.get(t, [])],
            "exists": lambda t: bool(self.by_template.get(t)),
            "count": lambda t: len(self.by_template.get(t, [])),
        }

    def names(self) -> dict[str, FactView]:
        return {t: FactView(fs[-1]) for t, fs in self.by_template.items() if fs}


class FactView:
    """One fact as seen by expressions: slots by attribute; an ordered fact's values by index."""

    __slots__ = ("fact",)

    def __init__(self, fact: Fact):
        self.fact = fact

    def get_slot(self, key: Any) -> Any:
        if isinstance(key, int):
            vals = self.fact.values
            return to_json(vals[key]) if -len(vals) <= key < len(vals) else None
        if key in self.fact.slots:
            return to_json(self.fact.slots[key])
        return None


def plain_slots(f: Fact) -> dict[str, Any]:
    return {k: to_json(v) for k, v in f.slots.items()}


def fact_text(f: Fact) -> str:
    return str(f)


class OpenScope(dict):
    """An expression scope where a name that is not bound is a missing value (None): a template
    produced upstream may be absent in one run (validation has already refused unknown names)."""

    def __contains__(self, key: object) -> bool:
        return True

    def __missing__(self, key: str) -> None:
        return None
