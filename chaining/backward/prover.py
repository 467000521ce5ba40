"""The prover's public names, kept here for callers that import `chaining.backward.prover`.

The prover is split by job: `session` (a consultation: facts, rules, questions, `prove`),
`engine` (the iterative SLD/SLG evaluation), `calls` (call keys, head unification, conclusions),
`index` (argument indexing of base facts), `results` (config, answers), `text` (goal text).
"""

from __future__ import annotations

from .engine import Query
from .results import Answer, ProofResult, ProverConfig
from .session import Session
from .text import goal_variables, instantiated_ce, instantiated_text

__all__ = [
    "Session",
    "ProverConfig",
    "ProofResult",
    "Answer",
    "Query",
    "goal_variables",
    "instantiated_ce",
    "instantiated_text",
]
