"""chaining: the reasoners over knowledge bases.

- `chaining.forward`: forward chaining on CLIPS (clipspy) and experta behind one interface.
- `chaining.backward`, `chaining.explain`: backward chaining and explanations (their own
  modules; import them from there).
- `chaining.derivation`: the one JSON shape of a forward derivation tree and its renderer (light:
  front ends import it without loading CLIPS).

The forward names (`ForwardEngine`, `EngineConfig`, ...) are re-exported from `chaining.forward`
lazily, so importing a light submodule does not load CLIPS.
"""

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover - for type checkers and editors
    from .forward import *  # noqa: F403


def __getattr__(name: str):
    # the forward names, imported on first use: CLIPS (and, for ExpertaEngine, experta) load then
    if not name.startswith("_") and name != "forward":
        forward = importlib.import_module(".forward", __name__)
        if name in forward.__all__:
            return getattr(forward, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
