"""Certainty factors as EMYCIN combines them (Shortliffe & Buchanan 1975; van Melle, EMYCIN 1980).

A certainty is a float in [-1, 1]: 1 certainly true, -1 certainly false, 0 unknown.
"""

from __future__ import annotations


def check_cf(cf: float, where: str = "certainty") -> float:
    """Validate a certainty factor; raises ValueError naming `where`."""
    if not isinstance(cf, (int, float)) or isinstance(cf, bool) or not -1.0 <= float(cf) <= 1.0:
        raise ValueError(f"{where}: expected a certainty in [-1, 1], got {cf!r}")
    return float(cf)


def combine(a: float, b: float) -> float:
    """Combine two certainties for the same conclusion from independent evidence.

    Both positive: a + b(1 - a); both negative: a + b(1 + a); mixed: (a + b) / (1 - min(|a|, |b|)).
    combine(0.6, 0.4) == 0.76; combine(0.6, -0.4) == 0.3333...
    """
    a, b = check_cf(a, "a"), check_cf(b, "b")
    if a >= 0 and b >= 0:
        return a + b * (1 - a)
    if a < 0 and b < 0:
        return a + b * (1 + a)
    denom = 1 - min(abs(a), abs(b))
    return 0.0 if denom == 0 else (a + b) / denom


def combine_all(cfs) -> float | None:
    """Fold `combine` over several certainties (None for none)."""
    out = None
    for cf in cfs:
        out = cf if out is None else combine(out, cf)
    return out


def conjunction(cfs) -> float:
    """Certainty of premises joined by AND: the minimum (1.0 for no premises)."""
    cfs = list(cfs)
    return min(cfs) if cfs else 1.0


def rule_conclusion(rule_cf: float, premises_cf: float) -> float:
    """Certainty a rule gives its conclusion: rule cf x certainty of its premises (premises_cf > 0)."""
    return rule_cf * max(0.0, premises_cf)


def probability_to_certainty(p: float) -> float:
    """Map a model probability p in [0, 1] to a certainty 2p - 1 (0.5 -> 0, 1 -> 1, 0 -> -1)."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"probability must be in [0, 1], got {p!r}")
    return 2.0 * p - 1.0
