"""YAML text <-> plain data, with the source position of every mapping key and sequence item.

Positions let validation errors point at `file:line:col`. Loading uses PyYAML's safe loader
(no Python object tags). Dumping is canonical: block style, keys in the order given, so that
`dump(load(dump(x))) == dump(x)`; a document loaded from a file is saved as its original text
(see `Pipeline.to_yaml`), which is what makes load-then-save byte for byte.
"""

from __future__ import annotations

from typing import Any

import yaml

from rules import yaml_core

from .errors import Issue, PipelineValidationError

Path = tuple[str | int, ...]

#: Nodes a document may hold once its aliases are expanded. A pipeline document has hundreds; a
#: "billion laughs" document (each level a list of aliases of the one before) a few lines long
#: expands to billions, which walking for positions (and any later copy) would have to visit.
MAX_EXPANDED_NODES = 100_000


def load_yaml(text: str, filename: str | None = None) -> tuple[Any, dict[Path, tuple[int, int]]]:
    """Parse YAML text; returns (data, positions) where positions maps a path such as
    `("nodes", 2, "inputs")` to the 1-based (line, column) of that key or item.

    Raises:
        PipelineValidationError: the text is not valid YAML (one issue with its line and column), an
            alias refers to a node that contains it (a recursive document), or the aliases expand the
            document past `MAX_EXPANDED_NODES` nodes (located at the first top-level key whose value
            passes it); checked on the composed node graph, in time linear in the text.
    """
    try:
        root = yaml_core.compose(text)
        data = yaml_core.load(text)  # YAML 1.2 booleans: `when: yes` is the branch "yes"
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (0, 0)
        raise PipelineValidationError(
            [Issue(None, "", f"not valid YAML: {exc.problem or exc}", filename, line, col)]
        ) from None
    except yaml.YAMLError as exc:
        raise PipelineValidationError([Issue(None, "", f"not valid YAML: {exc}", filename)]) from None
    if root is not None:
        _check_aliases(root, filename)
    positions: dict[Path, tuple[int, int]] = {}
    duplicates: list[Issue] = []
    if root is not None:
        _walk(root, (), positions, duplicates, filename)
    if duplicates:  # PyYAML keeps the last value silently; a pipeline document must say what it means once
        raise PipelineValidationError(duplicates)
    return data, positions


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return []


def _check_aliases(root: yaml.Node, filename: str | None) -> None:
    """Refuse a recursive alias and an alias expansion past MAX_EXPANDED_NODES (see load_yaml).

    Each distinct node's expanded size is computed once (iteratively, so deep documents do not
    exhaust the stack): the cost is linear in the number of distinct nodes, whatever the aliases
    multiply it to.
    """
    size: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            on_path.discard(key)
            size[key] = min(MAX_EXPANDED_NODES + 1, 1 + sum(size[id(c)] for c in _children(node)))
            continue
        if key in size:
            continue
        on_path.add(key)
        stack.append((node, True))
        for child in _children(node):
            if id(child) in on_path:
                line, col = child.start_mark.line + 1, child.start_mark.column + 1
                msg = "an alias refers to a node that contains it (a recursive document); write the value out"
                raise PipelineValidationError([Issue(None, "", msg, filename, line, col)])
            if id(child) not in size:
                stack.append((child, False))
    if size[id(root)] <= MAX_EXPANDED_NODES:
        return
    where: tuple[str, yaml.Node] = ("", root)
    if isinstance(root, yaml.MappingNode):
        for k, v in root.value:
            if size[id(v)] > MAX_EXPANDED_NODES:
                where = (str(k.value), k)
                break
    msg = (
        f"the document's aliases (*name) expand it to more than {MAX_EXPANDED_NODES:,} nodes; "
        "write the values out or use fewer aliases"
    )
    at = where[1].start_mark
    raise PipelineValidationError([Issue(None, where[0], msg, filename, at.line + 1, at.column + 1)])


def _walk(
    node: yaml.Node, path: Path, out: dict[Path, tuple[int, int]], duplicates: list[Issue], filename: str | None
) -> None:
    out.setdefault(path, (node.start_mark.line + 1, node.start_mark.column + 1))
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, tuple[int, int]] = {}
        for key, value in node.value:
            k = key.value if isinstance(key, yaml.ScalarNode) else str(key.value)
            at = (key.start_mark.line + 1, key.start_mark.column + 1)
            if k in seen and k != "<<":
                where = ".".join(f"[{p}]" if isinstance(p, int) else p for p in (*path, k)).replace(".[", "[")
                first = seen[k]
                msg = f"duplicate key {k!r} (first at line {first[0]}, column {first[1]}); give each key once"
                duplicates.append(Issue(None, where, msg, filename, *at))
                continue
            seen[k] = at
            out[path + (k,)] = at
            _walk(value, path + (k,), out, duplicates, filename)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            out[path + (i,)] = (item.start_mark.line + 1, item.start_mark.column + 1)
            _walk(item, path + (i,), out, duplicates, filename)


class _Dumper(yaml.SafeDumper):
    """Safe dumper that indents sequences inside mappings (`- id: ...` under `nodes:`)."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:  # noqa: D401
        return super().increase_indent(flow, False)


def _str_presenter(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    style = "|" if "\n" in data else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_Dumper.add_representer(str, _str_presenter)


def dump_yaml(data: Any) -> str:
    """Canonical YAML for `data` (block style, insertion order, unicode kept, 100-column lines)."""
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, default_flow_style=False, allow_unicode=True, width=100)
