"""Forward chaining: one engine interface, two backends.

- `ForwardEngine` runs knowledge-base files on the real CLIPS 6.4 engine (clipspy).
- `ExpertaEngine` runs a Python `experta.KnowledgeEngine` subclass.

Both return a `ForwardResult` (final working memory with fact ids, ordered firings with the
ids of the activating facts, asserts/retracts, printed text).

`WorkingMemory(clips_environment)` reads, asserts and retracts facts of any clipspy
environment without clipspy's fact objects, which leak in clipspy 1.0.6 (see clips_values).
"""

from .base import EngineConfig, ForwardChainer, as_facts
from .cancellation import Cancellation
from .clips_console import Console
from .clips_engine import ForwardEngine
from .clips_memory import WorkingMemory
from .errors import (
    EvaluationCancelled,
    EvaluationTimeout,
    FactAssertError,
    FiringLimitError,
    ForwardError,
    KnowledgeBaseLoadError,
    MemoryLimitError,
    RuleExecutionError,
    RunawayError,
)
from .result import FactEvent, Firing, ForwardResult
from .strategy import STRATEGY_NAMES, Strategy

__all__ = [
    "Cancellation",
    "Console",
    "EngineConfig",
    "EvaluationCancelled",
    "EvaluationTimeout",
    "ExpertaEngine",
    "FactAssertError",
    "FactEvent",
    "FiringLimitError",
    "Firing",
    "ForwardChainer",
    "ForwardEngine",
    "ForwardError",
    "ForwardResult",
    "KnowledgeBaseLoadError",
    "MemoryLimitError",
    "RuleExecutionError",
    "RunawayError",
    "STRATEGY_NAMES",
    "Strategy",
    "WorkingMemory",
    "as_facts",
]


def __getattr__(name: str):
    # experta calls logging.basicConfig() when imported: load it only when asked for.
    if name == "ExpertaEngine":
        from .experta_engine import ExpertaEngine

        return ExpertaEngine
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
