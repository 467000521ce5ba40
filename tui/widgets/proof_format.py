"""Proof trees of the backward prover as text lines (HOW): one home, `workbench.consultation`,
shared with the API's `/v1/consultations/{id}/how`; re-exported for the explanation tree."""

from __future__ import annotations

from workbench.consultation import how_lines as render_proof
from workbench.consultation import proof_label, proof_premises

__all__ = ["proof_label", "proof_premises", "render_proof"]
