"""The pipeline document: typed nodes and edges, parsed from YAML or built in code.

A pipeline is `name`, optional `description`, `cache` (result cache, off by default), `nodes`
(each `id`, `type` and the fields of its type) and `edges` (`from`, `to`, optional `when`: the
branch of a gate that enables the edge). The full schema with an example is in
docs/pipelines.md. This module checks the document's structure (known fields, their types,
expressions that compile); `validate.py` checks references (knowledge bases, models,
templates) and the graph (acyclic, connected, typed edges).
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path as FsPath
from typing import Any

import networkx as nx

from ..names import InvalidNameError, check_name
from .document import Path, dump_yaml, load_yaml
from .errors import Issue, PipelineValidationError
from .expressions import ExpressionError, compile_expression

NODE_TYPES = ("input", "model", "rules", "goal", "gate", "postprocess", "explain", "output")
KB_NODE_TYPES = ("rules", "goal", "gate", "postprocess")
ID_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
TOP_FIELDS = ("name", "description", "cache", "nodes", "edges")
COMMON_FIELDS = ("id", "type", "description", "join")
_KB_FIELDS = ("knowledge_base", "emit", "strategy", "max_firings", "timeout_s")
NODE_FIELDS: dict[str, tuple[str, ...]] = {
    "input": ("schema", "facts"),
    "model": ("model", "inputs", "labels", "facts", "timeout_s"),
    "rules": _KB_FIELDS,
    "postprocess": _KB_FIELDS,
    "gate": _KB_FIELDS + ("decision", "default"),
    "goal": ("knowledge_base", "goal", "all", "max_answers", "max_depth", "emit", "timeout_s"),
    "explain": ("targets",),
    "output": ("schema", "fields"),
}
REQUIRED_FIELDS: dict[str, tuple[str, ...]] = {
    "model": ("model", "inputs"),
    "rules": ("knowledge_base",),
    "postprocess": ("knowledge_base",),
    "gate": ("knowledge_base",),
    "goal": ("knowledge_base", "goal"),
    "output": ("fields",),
}
# functions bound per evaluation context (see executor): facts in scope, model labels
FACT_FUNCTIONS = frozenset({"fact", "facts", "exists", "count"})
MODEL_FUNCTIONS = frozenset({"label"})
DEFAULT_DECISION = {"template": "route", "slot": "branch"}


@dataclass(slots=True)
class Node:
    """One node: `id` (an identifier, usable in expressions), `type` (one of NODE_TYPES) and the
    fields of its type in `config`, in document order."""

    id: str
    type: str
    config: dict[str, Any] = field(default_factory=dict)

    def get(self, key: str, default: Any = None) -> Any:
        return self.config.get(key, default)

    @property
    def knowledge_bases(self) -> list[str]:
        """The knowledge base reference(s) of a rules/gate/postprocess/goal node, as a list."""
        kb = self.config.get("knowledge_base")
        return [kb] if isinstance(kb, str) else list(kb or [])

    @property
    def join(self) -> str:
        """`all` (skipped when any incoming edge is inactive) or `any` (runs when one is active).
        Default: `any` for output and explain nodes, `all` otherwise."""
        return self.config.get("join") or ("any" if self.type in ("output", "explain") else "all")

    @property
    def decision(self) -> dict[str, str]:
        """Gate nodes: the template and slot whose values name the branches to enable."""
        return {**DEFAULT_DECISION, **(self.config.get("decision") or {})}

    def to_data(self) -> dict[str, Any]:
        return {"id": self.id, "type": self.type, **copy.deepcopy(self.config)}


@dataclass(slots=True, frozen=True)
class Edge:
    """A directed edge; `when` names a gate branch that must be selected for the edge to be active."""

    source: str
    target: str
    when: str | None = None

    def to_data(self) -> dict[str, Any]:
        d: dict[str, Any] = {"from": self.source, "to": self.target}
        if self.when is not None:
            d["when"] = self.when
        return d


class Pipeline:
    """A pipeline graph of typed nodes. Build it in code or load it from YAML.

    `Pipeline.from_yaml(text)` then `to_yaml()` returns the same bytes; a pipeline built or
    edited in code is written in canonical form. `version` is the SHA-256 (hex) of `to_yaml()`.
    """

    def __init__(self, name: str, *, description: str | None = None, cache: bool = False):
        self.name = name
        self.description = description
        self.cache = cache
        self.nodes: dict[str, Node] = {}
        self.edges: list[Edge] = []
        self.source_file: str | None = None
        self._text: str | None = None
        self._loaded_fp: str | None = None
        self._yaml_cache: tuple[str, str] | None = None
        self._version_cache: tuple[str, str] | None = None
        self._positions: dict[Path, tuple[int, int]] = {}

    # -- building -------------------------------------------------------------------------
    def add_node(self, id: str, type: str, **config: Any) -> Node:
        """Add a node (see docs/pipelines.md for each type's fields); returns it.

        Raises:
            PipelineValidationError: duplicate id, bad id or unknown type.
        """
        issues = []
        if not isinstance(id, str) or not ID_RE.match(id):
            issues.append(Issue(str(id), "id", "must be an identifier (letters, digits, _; not starting with a digit)"))
        elif id in self.nodes:
            issues.append(Issue(id, "id", "duplicate node id"))
        if type not in NODE_TYPES:
            issues.append(
                Issue(str(id), "type", f"unknown node type {type!r}; expected one of {', '.join(NODE_TYPES)}")
            )
        if issues:
            raise PipelineValidationError(issues)
        node = Node(id, type, dict(config))
        self.nodes[id] = node
        return node

    def connect(self, source: str, target: str, when: str | None = None) -> Edge:
        """Add the edge `source -> target` (optionally enabled only by gate branch `when`).

        Raises:
            PipelineValidationError: an endpoint is not a node of this pipeline.
        """
        for end, fld in ((source, "from"), (target, "to")):
            if end not in self.nodes:
                raise PipelineValidationError(
                    [Issue(None, f"edges.{fld}", f"no node {end!r}; nodes: {', '.join(self.nodes)}")]
                )
        edge = Edge(source, target, when)
        self.edges.append(edge)
        return edge

    def chain(self, *node_ids: str) -> Pipeline:
        """Connect consecutive nodes: `chain("a", "b", "c")` adds a->b and b->c; returns self."""
        for a, b in zip(node_ids, node_ids[1:]):
            self.connect(a, b)
        return self

    def remove_node(self, id: str) -> None:
        """Remove a node and its edges (KeyError if absent)."""
        del self.nodes[id]
        self.edges = [e for e in self.edges if id not in (e.source, e.target)]

    def disconnect(self, source: str, target: str) -> None:
        self.edges = [e for e in self.edges if (e.source, e.target) != (source, target)]

    # -- views ------------------------------------------------------------------------------
    @property
    def graph(self) -> nx.DiGraph:
        """A networkx DiGraph: node attributes `type` and `node` (the Node), edge attribute `when`."""
        g = nx.DiGraph()
        for n in self.nodes.values():
            g.add_node(n.id, type=n.type, node=n)
        for e in self.edges:
            g.add_edge(e.source, e.target, when=e.when)
        return g

    def nodes_of(self, type: str) -> list[Node]:
        return [n for n in self.nodes.values() if n.type == type]

    def incoming(self, node_id: str) -> list[Edge]:
        return [e for e in self.edges if e.target == node_id]

    def outgoing(self, node_id: str) -> list[Edge]:
        return [e for e in self.edges if e.source == node_id]

    def position(self, path: Iterable[str | int]) -> tuple[int, int]:
        """(line, column) in the source YAML of a document path, (0, 0) if unknown."""
        path = tuple(path)
        while path:
            if path in self._positions:
                return self._positions[path]
            path = path[:-1]
        return (0, 0)

    def node_path(self, node_id: str) -> tuple[str | int, ...]:
        """The document path of a node (`("nodes", i)`)."""
        return ("nodes", list(self.nodes).index(node_id)) if node_id in self.nodes else ()

    def issue(self, node: str | None, field: str, message: str, path: Iterable[str | int] | None = None) -> Issue:
        """An `Issue` located in the source file when the pipeline came from one."""
        if path is None:
            path = self.node_path(node) if node else ()
            path = tuple(path) + tuple(p for p in re.split(r"[.\[\]]+", field) if p)
            path = tuple(int(p) if isinstance(p, str) and p.isdigit() else p for p in path)
        line, col = self.position(path)
        return Issue(node, field, message, self.source_file, line, col)

    # -- document ---------------------------------------------------------------------------
    def to_data(self, *, copy_values: bool = True) -> dict[str, Any]:
        """The document as plain data (keys in canonical order)."""
        d: dict[str, Any] = {"name": self.name}
        if self.description is not None:
            d["description"] = self.description
        if self.cache:
            d["cache"] = True
        d["nodes"] = [
            n.to_data() if copy_values else {"id": n.id, "type": n.type, **n.config} for n in self.nodes.values()
        ]
        d["edges"] = [e.to_data() for e in self.edges]
        return d

    def fingerprint(self) -> str:
        """A cheap exact key of the current content (compact JSON); changes whenever the document does."""
        return json.dumps(self.to_data(copy_values=False), separators=(",", ":"), default=repr)

    def to_yaml(self) -> str:
        """YAML text: the original text when unchanged since loading, else the canonical form."""
        fp = self.fingerprint()
        if self._text is not None and fp == self._loaded_fp:
            return self._text
        if self._yaml_cache is not None and self._yaml_cache[0] == fp:
            return self._yaml_cache[1]
        text = dump_yaml(self.to_data())
        self._yaml_cache = (fp, text)
        return text

    @property
    def version(self) -> str:
        """Content hash: SHA-256 hex of `to_yaml()` encoded as UTF-8 (64 characters)."""
        fp = self.fingerprint()
        if self._version_cache is not None and self._version_cache[0] == fp:
            return self._version_cache[1]
        v = hashlib.sha256(self.to_yaml().encode("utf-8")).hexdigest()
        self._version_cache = (fp, v)
        return v

    def save(self, path: str | FsPath) -> FsPath:
        """Write `to_yaml()` to `path` (bytes exactly as returned); returns the path."""
        p = FsPath(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(self.to_yaml().encode("utf-8"))
        return p

    def copy(self) -> Pipeline:
        return Pipeline.from_data(self.to_data())

    @classmethod
    def from_file(cls, path: str | FsPath) -> Pipeline:
        """Load a pipeline YAML file (structure checked; see `validate` for references).

        Raises:
            PipelineValidationError: with `file:line:col` locations; OSError if unreadable.
        """
        p = FsPath(path)
        try:
            text = p.read_bytes().decode("utf-8")
        except UnicodeDecodeError as exc:
            raise PipelineValidationError(
                [Issue(None, "", f"not UTF-8 text (byte {exc.start}: {exc.reason})", str(p))]
            ) from None
        return cls.from_yaml(text, filename=str(p))

    @classmethod
    def from_yaml(cls, text: str, filename: str | None = None) -> Pipeline:
        """Parse YAML text. Raises PipelineValidationError listing every structural problem."""
        data, positions = load_yaml(text, filename)
        pipe = _parse(data, positions, filename)
        pipe._text = text
        pipe._loaded_fp = pipe.fingerprint()
        return pipe

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> Pipeline:
        """Build from plain data (e.g. JSON from the API). Raises PipelineValidationError."""
        return _parse(copy.deepcopy(data), {}, None)

    def check_structure(self) -> list[Issue]:
        """Structural issues of the current (possibly edited) document: fields, types, expressions."""
        issues: list[Issue] = []
        for n in self.nodes.values():
            issues += _check_node(self, n)
        for i, e in enumerate(self.edges):
            issues += _check_edge(self, e, i)
        return issues

    def __repr__(self) -> str:
        return f"Pipeline({self.name!r}, nodes={list(self.nodes)}, edges={len(self.edges)})"


# -- parsing ------------------------------------------------------------------------------------


def _parse(data: Any, positions: dict[Path, tuple[int, int]], filename: str | None) -> Pipeline:
    def issue(node: str | None, fld: str, msg: str, path: Path) -> Issue:
        line, col = _locate(positions, path)
        return Issue(node, fld, msg, filename, line, col)

    if not isinstance(data, dict):
        raise PipelineValidationError(
            [issue(None, "", f"expected a mapping with {', '.join(TOP_FIELDS)}, got {type(data).__name__}", ())]
        )
    issues: list[Issue] = []
    for key in data:
        if key not in TOP_FIELDS:
            issues.append(issue(None, str(key), f"unknown field; expected one of {', '.join(TOP_FIELDS)}", (key,)))
    name = data.get("name")
    try:
        check_name(name, "pipeline")  # the one naming rule of API, CLI and store (workbench/names.py)
    except InvalidNameError as exc:
        issues.append(issue(None, "name", str(exc), ("name",)))
        name = str(name)
    desc = data.get("description")
    if desc is not None and not isinstance(desc, str):
        issues.append(issue(None, "description", "expected a string", ("description",)))
    cache = data.get("cache", False)
    if not isinstance(cache, bool):
        issues.append(issue(None, "cache", f"expected true or false, got {cache!r}", ("cache",)))
    pipe = Pipeline(name, description=desc if isinstance(desc, str) else None, cache=cache is True)
    pipe.source_file = filename
    pipe._positions = positions
    nodes = data.get("nodes")
    if not isinstance(nodes, list) or not nodes:
        issues.append(issue(None, "nodes", "expected a non-empty list of nodes", ("nodes",)))
        nodes = []
    for i, raw in enumerate(nodes):
        if not isinstance(raw, dict):
            issues.append(issue(None, f"nodes[{i}]", "expected a mapping with 'id' and 'type'", ("nodes", i)))
            continue
        nid, ntype = raw.get("id"), raw.get("type")
        if not isinstance(nid, str) or not ID_RE.match(nid):
            issues.append(
                issue(
                    str(nid) if nid else None,
                    f"nodes[{i}].id",
                    f"expected an identifier (letters, digits, _), got {nid!r}",
                    ("nodes", i, "id"),
                )
            )
            continue
        if nid in pipe.nodes:
            issues.append(issue(nid, "id", "duplicate node id", ("nodes", i, "id")))
            continue
        if ntype not in NODE_TYPES:
            issues.append(
                issue(
                    nid,
                    "type",
                    f"unknown node type {ntype!r}; expected one of {', '.join(NODE_TYPES)}",
                    ("nodes", i, "type"),
                )
            )
            continue
        pipe.nodes[nid] = Node(nid, ntype, {k: v for k, v in raw.items() if k not in ("id", "type")})
    edges = data.get("edges", [])
    if not isinstance(edges, list):
        issues.append(issue(None, "edges", "expected a list of edges", ("edges",)))
        edges = []
    for i, raw in enumerate(edges):
        if not isinstance(raw, dict) or not {"from", "to"} <= set(raw) or set(raw) - {"from", "to", "when"}:
            issues.append(
                issue(None, f"edges[{i}]", "expected a mapping with 'from', 'to' and optionally 'when'", ("edges", i))
            )
            continue
        pipe.edges.append(Edge(str(raw["from"]), str(raw["to"]), None if raw.get("when") is None else str(raw["when"])))
    issues += pipe.check_structure()
    if issues:
        raise PipelineValidationError(issues)
    return pipe


def _locate(positions: dict[Path, tuple[int, int]], path: Path) -> tuple[int, int]:
    while path:
        if path in positions:
            return positions[path]
        path = path[:-1]
    return positions.get((), (0, 0)) if positions else (0, 0)


# -- structural checks per node type ------------------------------------------------------------


def _check_node(pipe: Pipeline, n: Node) -> list[Issue]:
    out: list[Issue] = []

    def bad(fld: str, msg: str) -> None:
        out.append(pipe.issue(n.id, fld, msg))

    allowed = COMMON_FIELDS + NODE_FIELDS[n.type]
    for key in n.config:
        if key not in allowed:
            bad(
                str(key),
                f"unknown field for a {n.type} node; expected one of {', '.join(k for k in allowed if k not in ('id', 'type'))}",
            )
    for key in REQUIRED_FIELDS.get(n.type, ()):
        if n.config.get(key) in (None, "", [], {}):
            bad(key, f"required for a {n.type} node")
    c = n.config
    if "description" in c and not isinstance(c["description"], str):
        bad("description", "expected a string")
    if "join" in c and c["join"] not in ("all", "any"):
        bad("join", f"expected 'all' or 'any', got {c['join']!r}")
    if "schema" in c and not isinstance(c["schema"], dict):
        bad("schema", "expected a JSON Schema object (a mapping)")
    if "schema" in c and isinstance(c["schema"], dict):
        import jsonschema

        try:
            jsonschema.Draft202012Validator.check_schema(c["schema"])
        except jsonschema.SchemaError as exc:
            bad("schema" + "".join(f".{p}" for p in exc.path), f"not a valid JSON Schema: {exc.message}")
    if "facts" in c:
        out += _check_fact_mappings(pipe, n, c["facts"], MODEL_FUNCTIONS if n.type == "model" else frozenset())
    if "knowledge_base" in c:
        kb = c["knowledge_base"]
        if not (isinstance(kb, str) and kb) and not (
            isinstance(kb, list) and kb and all(isinstance(k, str) and k for k in kb)
        ):
            bad("knowledge_base", "expected a knowledge base name or path, or a list of them")
    for key in ("emit", "targets"):
        if key in c and not (isinstance(c[key], list) and all(isinstance(t, str) for t in c[key])):
            bad(key, "expected a list of template names")
    for key in ("max_firings", "max_answers", "max_depth"):
        if key in c and not (isinstance(c[key], int) and not isinstance(c[key], bool) and c[key] >= 0):
            bad(key, f"expected a non-negative integer, got {c[key]!r}")
    if "timeout_s" in c and not (
        isinstance(c["timeout_s"], (int, float)) and not isinstance(c["timeout_s"], bool) and c["timeout_s"] > 0
    ):
        bad("timeout_s", f"expected positive seconds, got {c['timeout_s']!r}")
    if "strategy" in c:
        from chaining.forward import STRATEGY_NAMES

        if c["strategy"] not in STRATEGY_NAMES:
            bad(
                "strategy",
                f"unknown conflict-resolution strategy {c['strategy']!r}; expected one of {', '.join(STRATEGY_NAMES)}",
            )
    if "all" in c and not isinstance(c["all"], bool):
        bad("all", "expected true or false")
    if n.type == "model":
        if "model" in c and not isinstance(c["model"], str):
            bad("model", "expected a model name")
        inputs = c.get("inputs")
        if inputs is not None and not isinstance(inputs, dict):
            bad("inputs", "expected a mapping from model input name to an expression")
        elif isinstance(inputs, dict):
            for k, v in inputs.items():
                _check_expr(out, pipe, n, f"inputs.{k}", v, FACT_FUNCTIONS)
        if "labels" in c and not (
            isinstance(c["labels"], list) and all(isinstance(x, (str, int)) for x in c["labels"])
        ):
            bad("labels", "expected a list of class labels (strings or integers)")
    if n.type == "gate":
        dec = c.get("decision")
        if dec is not None and not (
            isinstance(dec, dict)
            and set(dec) <= {"template", "slot"}
            and all(isinstance(v, str) and v for v in dec.values())
        ):
            bad("decision", "expected {template: NAME, slot: NAME}")
        if "default" in c and not isinstance(c["default"], str):
            bad("default", "expected a branch name")
    if n.type == "goal" and "goal" in c:
        g = c["goal"]
        if not (isinstance(g, str) and g.strip().startswith("(") and g.strip().endswith(")")):
            bad("goal", f"expected a fact pattern such as '(ancestor ?x otto)', got {g!r}")
    if n.type == "output" and "fields" in c:
        fields = c["fields"]
        if not isinstance(fields, dict) or not fields:
            bad("fields", "expected a mapping from output field to an expression (or {expr, default})")
        else:
            for k, v in fields.items():
                if isinstance(v, dict):
                    if "expr" not in v or set(v) - {"expr", "default"}:
                        bad(f"fields.{k}", "expected an expression or {expr: EXPRESSION, default: VALUE}")
                        continue
                    v = v["expr"]
                _check_expr(out, pipe, n, f"fields.{k}", v, FACT_FUNCTIONS)
    return out


def _check_fact_mappings(pipe: Pipeline, n: Node, facts: Any, funcs: frozenset[str]) -> list[Issue]:
    out: list[Issue] = []
    if not isinstance(facts, list):
        return [pipe.issue(n.id, "facts", "expected a list of {template, slots, foreach?, when?}")]
    for i, fm in enumerate(facts):
        where = f"facts[{i}]"
        if (
            not isinstance(fm, dict)
            or "template" not in fm
            or set(fm) - {"template", "slots", "values", "foreach", "when"}
        ):
            out.append(
                pipe.issue(
                    n.id,
                    where,
                    "expected {template: NAME, slots: {SLOT: EXPRESSION}} (optional foreach, when; or values: [...] for an ordered fact)",
                )
            )
            continue
        if not isinstance(fm["template"], str) or not fm["template"]:
            out.append(pipe.issue(n.id, f"{where}.template", "expected a template name"))
        slots = fm.get("slots", {})
        if "slots" in fm and "values" in fm:
            out.append(
                pipe.issue(n.id, where, "give either 'slots' (template fact) or 'values' (ordered fact), not both")
            )
        if not isinstance(slots, dict):
            out.append(pipe.issue(n.id, f"{where}.slots", "expected a mapping from slot name to expression"))
        else:
            for k, v in slots.items():
                _check_expr(out, pipe, n, f"{where}.slots.{k}", v, funcs)
        if "values" in fm:
            if not isinstance(fm["values"], list):
                out.append(pipe.issue(n.id, f"{where}.values", "expected a list of expressions"))
            else:
                for j, v in enumerate(fm["values"]):
                    _check_expr(out, pipe, n, f"{where}.values[{j}]", v, funcs)
        for key in ("foreach", "when"):
            if key in fm:
                _check_expr(out, pipe, n, f"{where}.{key}", fm[key], funcs)
    return out


def _check_expr(out: list[Issue], pipe: Pipeline, n: Node, fld: str, value: Any, funcs: frozenset[str]) -> None:
    try:
        compile_expression(value, funcs | FACT_FUNCTIONS)
    except ExpressionError as exc:
        out.append(pipe.issue(n.id, fld, str(exc)))


def _check_edge(pipe: Pipeline, e: Edge, i: int) -> list[Issue]:
    out = []
    for end, fld in ((e.source, "from"), (e.target, "to")):
        if end not in pipe.nodes:
            out.append(
                pipe.issue(
                    None, f"edges[{i}].{fld}", f"no node {end!r}; nodes: {', '.join(pipe.nodes)}", ("edges", i, fld)
                )
            )
    if e.when is not None and e.source in pipe.nodes and pipe.nodes[e.source].type != "gate":
        out.append(
            pipe.issue(
                e.source, f"edges[{i}].when", "only edges leaving a gate node may have 'when'", ("edges", i, "when")
            )
        )
    return out
