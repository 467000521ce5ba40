"""The pipeline document: typed nodes and edges, parsed from YAML or built in code.

A pipeline is `name`, optional `description`, `cache` (result cache, off by default), `nodes`
(each `id`, `type` and the fields of its type) and `edges` (`from`, `to`, optional `when`: the
branch of a gate that enables the edge). The full schema with an example is in
docs/pipelines.md. `spec_parse.py` reads a document; `spec_checks.py` checks its structure
(known fields, their types, expressions that compile; `spec_generate.py` for generate nodes);
`validate.py` checks references (knowledge bases, models, templates) and the graph (acyclic,
connected, typed edges).
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
from .spec_generate import GENERATE_FIELDS

NODE_TYPES = ("input", "model", "generate", "rules", "goal", "gate", "postprocess", "explain", "output")
KB_NODE_TYPES = ("rules", "goal", "gate", "postprocess")
ID_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
TOP_FIELDS = ("name", "description", "cache", "nodes", "edges")
COMMON_FIELDS = ("id", "type", "description", "join")
_KB_FIELDS = ("knowledge_base", "emit", "strategy", "max_firings", "timeout_s")
NODE_FIELDS: dict[str, tuple[str, ...]] = {
    "input": ("schema", "facts"),
    "model": ("model", "inputs", "labels", "facts", "timeout_s"),
    "generate": GENERATE_FIELDS,
    "rules": _KB_FIELDS,
    "postprocess": _KB_FIELDS,
    "gate": _KB_FIELDS + ("decision", "default"),
    "goal": ("knowledge_base", "goal", "all", "max_answers", "max_depth", "emit", "timeout_s"),
    "explain": ("targets",),
    "output": ("schema", "fields"),
}
REQUIRED_FIELDS: dict[str, tuple[str, ...]] = {
    "model": ("model", "inputs"),
    "generate": ("model",),
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
        self._node_index: dict[str, int] = {}  # node id -> its index in the source's `nodes` list
        self._shared_fp: str | None = None  # set by `share()`: the fingerprint, not recomputed

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
        self._shared_fp = None
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
        self._shared_fp = None
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
        self._shared_fp = None
        self.edges = [e for e in self.edges if id not in (e.source, e.target)]

    def disconnect(self, source: str, target: str) -> None:
        self._shared_fp = None
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
        if node_id in self._node_index:  # as read: nodes skipped for an error do not shift the others
            return ("nodes", self._node_index[node_id])
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
        """A cheap exact key of the current content (compact JSON); changes whenever the document
        does. A shared pipeline (`share`) answers the fingerprint it had when shared."""
        if self._shared_fp is not None:
            return self._shared_fp
        return json.dumps(self.to_data(copy_values=False), separators=(",", ":"), default=repr)

    @property
    def shared(self) -> bool:
        """True once `share` was called and no building method was called since."""
        return self._shared_fp is not None

    def share(self) -> Pipeline:
        """Mark this pipeline as shared by runs and read-only from now on (the facade's resolved
        pipelines): `fingerprint`, and so `version` and the executor's plan lookup, no longer
        serialise the document on every run (it was ~8% of the event loop's time per predict).
        The building methods (`add_node`, `connect`, `remove_node`, `disconnect`) un-share it; a
        shared pipeline's node configs must not be edited in place. Returns self."""
        self._shared_fp = None
        self._shared_fp = self.fingerprint()
        return self

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
        """Write `to_yaml()` to `path` (bytes exactly as returned); returns the path.

        Raises:
            PipelineValidationError: the pipeline's name breaks the naming rule (`workbench.names`), which
                loading the file back would refuse; nothing is written.
        """
        try:
            check_name(self.name, "pipeline")
        except InvalidNameError as exc:
            raise PipelineValidationError([self.issue(None, "name", str(exc), ("name",))]) from None
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
        from .spec_parse import parse_document

        data, positions = load_yaml(text, filename)
        pipe = parse_document(data, positions, filename)
        pipe._text = text
        pipe._loaded_fp = pipe.fingerprint()
        return pipe

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> Pipeline:
        """Build from plain data (e.g. JSON from the API). Raises PipelineValidationError."""
        from .spec_parse import parse_document

        return parse_document(copy.deepcopy(data), {}, None)

    def check_structure(self) -> list[Issue]:
        """Structural issues of the current (possibly edited) document: fields, types, expressions."""
        from .spec_checks import check_edge, check_node

        issues: list[Issue] = []
        for n in self.nodes.values():
            issues += check_node(self, n)
        for i, e in enumerate(self.edges):
            issues += check_edge(self, e, i)
        return issues

    def __repr__(self) -> str:
        return f"Pipeline({self.name!r}, nodes={list(self.nodes)}, edges={len(self.edges)})"
