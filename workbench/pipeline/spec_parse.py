"""Reading a pipeline document (plain data + YAML source positions) into a `Pipeline`."""

from __future__ import annotations

from typing import Any

from ..names import InvalidNameError, check_name
from .document import Path
from .errors import Issue, PipelineValidationError
from .spec import ID_RE, NODE_TYPES, TOP_FIELDS, Edge, Node, Pipeline


def parse_document(data: Any, positions: dict[Path, tuple[int, int]], filename: str | None) -> Pipeline:
    def issue(node: str | None, fld: str, msg: str, path: Path) -> Issue:
        line, col = locate(positions, path)
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
        pipe._node_index[nid] = i
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
        when = raw.get("when")
        if when is not None and not isinstance(when, (str, int)) or isinstance(when, bool):
            issues.append(
                issue(
                    None,
                    f"edges[{i}].when",
                    f"expected the name of a gate branch, got {when!r}: quote it if it is a branch name",
                    ("edges", i, "when"),
                )
            )
            continue
        pipe.edges.append(Edge(str(raw["from"]), str(raw["to"]), None if when is None else str(when)))
    issues += pipe.check_structure()
    if issues:
        raise PipelineValidationError(issues)
    return pipe


def locate(positions: dict[Path, tuple[int, int]], path: Path) -> tuple[int, int]:
    while path:
        if path in positions:
            return positions[path]
        path = path[:-1]
    return positions.get((), (0, 0)) if positions else (0, 0)
