"""YAML documents that rule authors write (pipelines, `kb test` scenarios) read with YAML 1.2's booleans.

PyYAML implements YAML 1.1, where `yes`, `no`, `on` and `off` (any case) are booleans: a scenario fact
`{value: yes}` became the symbol TRUE and a gate edge `when: yes` the boolean True, so a rule that matches
`(value yes)` or a gate that asserts `(route (branch yes))` silently did not match (n16's findings). YAML 1.2's
core schema, which current YAML tools follow, keeps those words strings; only `true` and `false` (`True`,
`TRUE`, ...) are booleans. Everything else (numbers, null, timestamps, merge keys) is PyYAML's safe loader.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

_BOOL = "tag:yaml.org,2002:bool"


class CoreSchemaLoader(yaml.SafeLoader):
    """`yaml.SafeLoader` whose plain booleans are YAML 1.2's: `true`/`false` in lower, title or upper case."""


CoreSchemaLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != _BOOL]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
CoreSchemaLoader.add_implicit_resolver(_BOOL, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF"))


def load(text: str) -> Any:
    """The document `text` as Python data (`yaml.safe_load` with YAML 1.2 booleans). Raises yaml.YAMLError."""
    return yaml.load(text, Loader=CoreSchemaLoader)  # noqa: S506 - a SafeLoader subclass


def compose(text: str) -> yaml.Node | None:
    """The node graph of `text` (for positions), resolved as `load` resolves it. Raises yaml.YAMLError."""
    return yaml.compose(text, Loader=CoreSchemaLoader)
