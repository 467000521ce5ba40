"""Forward derivation trees for the front ends: the one JSON shape and renderer live in
`chaining.derivation`; the TUI and the API reach them here, through the workbench, never the
reasoner room itself (import-linter contract `front-ends-through-workbench`).

`derivation_label(d) -> rich.text.Text`: one line for a derivation node.
`derivation_tree(d, parent=None) -> rich.tree.Tree`: the whole tree.

Light: imports only rich (no CLIPS, no pipeline code), so the TUI starts fast.
"""

from __future__ import annotations

from chaining.derivation import derivation_label, derivation_tree

__all__ = ["derivation_label", "derivation_tree"]
