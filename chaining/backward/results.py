"""Limits of a proof (`ProverConfig`) and what a proof returns (`Answer`, `ProofResult`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rules.facts import Fact

from .proof import Proof, proofs_to_steps
from .rulebase import SkippedRule
from .terms import Value, bindings_json, fact_text

DEFAULT_MAX_DEPTH = 100_000
PROOF_MODES = ("none", "first", "all")


@dataclass(slots=True)
class ProverConfig:
    """Limits of one proof.

    Attributes:
        max_depth: most nested rule activations (a subgoal inside a subgoal ...) before
            DepthLimitError. The prover keeps its goal stack on the heap (no Python recursion),
            so this is a limit on memory only; default 100,000.
        timeout: seconds per `prove` call before ProofTimeout (None: no limit).
        cf_threshold: premises with certainty at or below this do not let a rule conclude
            (EMYCIN uses 0.2); used only when certainty factors are on.
    """

    max_depth: int = DEFAULT_MAX_DEPTH
    timeout: float | None = 30.0
    cf_threshold: float = 0.2

    def __post_init__(self) -> None:
        if not isinstance(self.max_depth, int) or isinstance(self.max_depth, bool) or self.max_depth < 1:
            raise ValueError(f"ProverConfig.max_depth must be an int >= 1, got {self.max_depth!r}")
        if self.timeout is not None and not (isinstance(self.timeout, (int, float)) and self.timeout > 0):
            raise ValueError(f"ProverConfig.timeout must be positive seconds or None, got {self.timeout!r}")
        if not 0.0 <= self.cf_threshold < 1.0:
            raise ValueError(f"ProverConfig.cf_threshold must be in [0, 1), got {self.cf_threshold!r}")


@dataclass(slots=True)
class Answer:
    """One answer to a goal: the goal's variable bindings, the fact (single-pattern goals), its proof.

    `truth` is "true", or "undefined" for an answer that holds only under the well-founded
    semantics' third value (negation through a cycle that neither proves nor refutes it).
    """

    bindings: dict[str, Value]
    proof: Proof
    fact: Fact | None = None
    certainty: float | None = None
    truth: str = "true"

    def to_dict(self, proof: bool = True) -> dict[str, Any]:
        """`{"bindings", "fact", "certainty", "truth", "proof"}`; `proof` is the nested tree (`Proof.to_dict`)."""
        out: dict[str, Any] = {
            "bindings": bindings_json(self.bindings),
            "fact": fact_text(self.fact) if self.fact else None,
            "certainty": self.certainty,
            "truth": self.truth,
        }
        if proof:
            out["proof"] = self.proof.to_dict()
        return out


@dataclass(slots=True)
class ProofResult:
    """The outcome of `Session.prove`.

    Attributes:
        goal: the goal text. answers: in the order found. complete: True when the search was
        exhausted (False when stopped at `limit`). skipped_rules: rules not usable backwards,
        with reasons. questions: questions asked during this proof, with answers.
        warnings: expressions CLIPS could not evaluate (the premise then failed). seconds: wall time.
        tables: subgoal tables created. count: answers found (equals len(answers) unless the
        caller streamed them with `keep=False`). model_calls: one `{"model", "version", "batch"}` per
        predict call made for model-backed relations during this proof (`;@model`).
    """

    goal: str
    answers: list[Answer]
    complete: bool
    skipped_rules: list[SkippedRule]
    questions: list[dict] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0
    tables: int = 0
    count: int = 0
    model_calls: list[dict] = field(default_factory=list)

    def _repr_html_(self) -> str:
        """Jupyter: the answers (bindings, certainty) as a table, then each proof as nested lists."""
        from chaining.display import proof_result_html

        return proof_result_html(self)

    def __rich__(self) -> Any:
        """`rich.print(result)`: the answers table and each proof as a tree."""
        from chaining.display import proof_result_rich

        return proof_result_rich(self)

    def to_dict(self, proofs: str = "tree") -> dict[str, Any]:
        """JSON document of the result.

        Args:
            proofs: "tree" (each answer's nested proof, as before), "all" or "first" (proofs as
                one flat list of steps shared by every answer, `{"steps": [...]}` with
                `answers[i].proof` the id of its root step; a step's `premises` are step ids, so
                a proof 10,000 levels deep is a flat list), or "none".

        Raises:
            ValueError: an unknown `proofs` mode.
        """
        if proofs not in ("tree", *PROOF_MODES):
            raise ValueError(f"proofs must be one of tree, none, first, all; got {proofs!r}")
        doc: dict[str, Any] = {"goal": self.goal}
        if proofs == "tree":
            doc["answers"] = [a.to_dict() for a in self.answers]
        else:
            doc["answers"] = [a.to_dict(proof=False) for a in self.answers]
            roots = [a.proof for a in self.answers] if proofs == "all" else [a.proof for a in self.answers[:1]]
            if proofs != "none":
                steps, ids = proofs_to_steps(roots)
                for a, root_id in zip(doc["answers"], ids):
                    a["proof"] = root_id
                doc["steps"] = steps
        doc.update(
            {
                "complete": self.complete,
                "skipped_rules": [s.to_dict() for s in self.skipped_rules],
                "questions": self.questions,
                "model_calls": self.model_calls,
                "warnings": self.warnings,
                "seconds": self.seconds,
            }
        )
        return doc
