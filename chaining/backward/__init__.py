"""Backward chaining: a goal-driven prover over a knowledge base's AST.

    from rules import load_knowledge_base
    from chaining.backward import Session, ScriptedProvider
    kb = load_knowledge_base("knowledge_bases/family.clp")
    result = Session(kb, facts=[...]).prove_sync("(ancestor ?x otto)")
    for a in result.answers: print(a.bindings, a.proof.label)

See `engine` for the algorithm (iterative SLD resolution, SLG tabling of recursive relations),
`askable` for questions and providers, `certainty` for EMYCIN certainty factors.
"""

from .askable import AskAnswer, AskBroker, ModelProvider, PersonProvider, Provider, Question, ScriptedProvider
from .certainty import combine, probability_to_certainty
from .check import UnknownRelation, unknown_premises
from .errors import (
    AskError,
    BackwardError,
    DepthLimitError,
    EvaluationError,
    GoalSyntaxError,
    NotStratifiedError,
    ProofCancelled,
    ProofTimeout,
)
from .goals import parse_goal
from .proof import Proof
from .results import Answer, ProofResult, ProverConfig
from .rulebase import SkippedRule
from .session import Session

__all__ = [
    "Session",
    "ProverConfig",
    "ProofResult",
    "Answer",
    "Proof",
    "SkippedRule",
    "parse_goal",
    "Question",
    "AskAnswer",
    "AskBroker",
    "Provider",
    "PersonProvider",
    "ModelProvider",
    "ScriptedProvider",
    "combine",
    "probability_to_certainty",
    "BackwardError",
    "GoalSyntaxError",
    "EvaluationError",
    "DepthLimitError",
    "ProofTimeout",
    "ProofCancelled",
    "NotStratifiedError",
    "AskError",
    "UnknownRelation",
    "unknown_premises",
]
