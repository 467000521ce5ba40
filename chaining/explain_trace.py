"""What a forward run's trace says about facts that are no longer in the final working memory: which
firing retracted or modified each (a WHY NOT must not read as if the rule never fired when its
conclusion was retracted later, e.g. by truth maintenance when a `logical` premise went away), and the
content a version had before a retract or modify ended it (a HOW shows what an earlier firing matched)."""

from __future__ import annotations

from typing import Any


def lost_conclusions(result: Any, rule: str, *, only_lost: bool = False, limit: int = 3) -> str | None:
    """A note on the facts `rule` asserted that the final working memory lacks, or None when it never fired
    (or, with `only_lost`, when none of its conclusions was retracted).

    Args:
        result: a `ForwardResult` (its `firings`, `events` and final `facts`; events need `trace_facts`).
        rule: the rule's name as the firings record it.
        only_lost: None unless a fact it asserted was retracted.
        limit: at most this many firings and facts are named.

    Returns: e.g. "during the run it fired at firing #0; of its facts f-3, retracted at firing #2 (rule r2)"
    ("f-3 (b (x 1)), retracted ..." when the run recorded fact versions, `trace_versions`); without fact
    events, only the firings.
    """
    from .backward.terms import fact_text

    firings = result.firings
    mine = [i for i, f in enumerate(firings) if f.rule == rule]
    if not mine:
        return None
    where = ", ".join(f"#{i}" for i in mine[:limit]) + (f" and {len(mine) - limit} more" if len(mine) > limit else "")
    fired = f"during the run it fired at firing {where}"
    own = set(mine)
    present = {f.id for f in result.facts}
    versions = getattr(result, "versions", None)
    events = list(result.events or ())
    notes = []
    for n, e in enumerate(events):
        if e.kind != "assert" or e.firing not in own or e.fact in present:
            continue
        gone = [g for g in events[n + 1 :] if g.fact == e.fact and g.kind == "retract"]
        if not gone:
            continue
        k = gone[-1].firing  # the last retract (a modify retracts and asserts the same id)
        by = f", retracted at firing #{k} (rule {firings[k].rule})" if k is not None else ""
        was = version_at(versions, e.fact, None)  # its content, when the run recorded fact versions
        notes.append(f"f-{e.fact}{' ' + fact_text(was) if was is not None else ''}{by}")
    if not notes:
        return None if only_lost else fired
    more = f" and {len(notes) - limit} more" if len(notes) > limit else ""
    return f"{fired}; of its facts {'; '.join(notes[:limit])}{more}"


def version_at(versions: Any, fact_id: int, before: int | None) -> Any:
    """The `Fact` that id `fact_id` was when firing `before` fired: the version the first retract at or after
    that firing ended (`before` None: the last version a retract ended); None when the run did not record
    it or no retract ended it. `versions`: `ForwardResult.versions` (kept with `trace_versions`), or None."""
    ended = versions.get(fact_id) if versions else None
    if not ended:
        return None
    if before is None:
        return ended[-1][1]
    return next((f for k, f in ended if k is not None and k >= before), None)
