"""chaining: the reasoners over knowledge bases.

- `chaining.forward`: forward chaining on CLIPS (clipspy) and experta behind one interface.
- `chaining.backward`, `chaining.explain`: backward chaining and explanations (their own
  modules; import them from there).
"""

from .forward import (
    EngineConfig,
    EvaluationTimeout,
    FactAssertError,
    FactEvent,
    Firing,
    FiringLimitError,
    ForwardChainer,
    ForwardEngine,
    ForwardError,
    ForwardResult,
    KnowledgeBaseLoadError,
    RuleExecutionError,
    RunawayError,
    Strategy,
)

__all__ = [
    "EngineConfig",
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
    "RuleExecutionError",
    "RunawayError",
    "Strategy",
]


def __getattr__(name: str):
    if name == "ExpertaEngine":  # imported lazily: experta configures logging when imported
        from .forward import ExpertaEngine

        return ExpertaEngine
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
