"""Part 3 of `workbench demo`: the demo language model streamed through rules acting as rails."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from .prompts import PROMPTS
from .summary import PipelineSummary, percentile_ms

PIPELINE = "demo_generate"


def generation_unavailable() -> str | None:
    """Why the generation part cannot run here (None when it can)."""
    try:
        from neural.generation import DEMO_LM_DIR, AsyncLLMEngine  # noqa: F401
    except Exception as exc:  # the engine is another room's work: say what is missing
        return f"the generation engine (neural.generation) cannot be imported: {exc}"
    if not (DEMO_LM_DIR / "config.json").is_file() or not any(DEMO_LM_DIR.glob("*.safetensors")):
        return f"the demo language model is missing at {DEMO_LM_DIR} (config.json + *.safetensors)"
    return None


async def run_generate(
    wb: Any,
    *,
    quick: bool = False,
    progress: Callable[[int, int], None] | None = None,
    on_text: Callable[[int, str], None] | None = None,
) -> PipelineSummary:
    """Generate for every demo prompt concurrently (continuous batching), through the rails.

    Checks the input rail against the prompts' known outcomes (`blocked`), and counts outcomes,
    rail reasons, redactions, TTFT/TPOT, running sequences per step, rule firings, and model calls
    the input rail kept from running. `on_text(index, chunk)` streams what users are shown of the
    first prompt that is not expected to be blocked (a final "\n" ends it).
    """
    from .generate import RailedGenerator

    s = PipelineSummary(PIPELINE, "generation: demo LM streamed through rules as output rails")
    reason = generation_unavailable()
    if reason is not None:
        s.unavailable = reason
        return s
    prompts = PROMPTS if not quick else [p for p in PROMPTS if p["expect"] == "blocked"][:1] + PROMPTS[:3]
    s.inputs = len(prompts)
    stream_index = next((i for i, p in enumerate(prompts) if p["expect"] is None), -1)
    gen = RailedGenerator(wb)
    done = 0
    t0 = time.perf_counter()
    try:
        import asyncio

        async def one(i: int, p: dict[str, Any]) -> Any:
            nonlocal done
            cb = (lambda chunk: on_text(i, chunk)) if on_text and i == stream_index else None
            try:
                r = await gen.generate(p["prompt"], index=i, on_text=cb)
            except Exception as exc:  # reported per prompt; the others go on
                r = exc
            if cb:
                cb("\n")  # the end of the streamed answer
            done += 1
            if progress:
                progress(done, len(prompts))
            return r

        results = await asyncio.gather(*(one(i, p) for i, p in enumerate(prompts)))
    finally:
        gen.close()
    s.seconds = time.perf_counter() - t0
    reasons: Counter = Counter()
    ttft, tpot = [], []
    tokens = redactions = blocked_right = blocked_expected = 0
    for p, r in zip(prompts, results):
        if isinstance(r, BaseException):
            s.failed += 1
            s.errors.append(f"{p['prompt'][:30]!r}: {r}")
            continue
        s.runs_recorded += r.run_id is not None
        s.latencies_s.append(r.latency_s)
        s.outcomes[r.outcome] += 1
        s.rule_firings += r.firings
        for why in r.reasons:
            reasons[why.split(":")[0]] += 1
        redactions += r.redactions
        if p["expect"] == "blocked":
            blocked_expected += 1
            blocked_right += r.outcome == "blocked"
        if r.outcome == "blocked":
            s.model_calls_skipped += 1
        else:
            s.model_calls += 1
            tokens += r.completion_tokens
            for n in r.running_seen:
                s.batch_sizes[n] += 1
            if r.ttft_s is not None:
                ttft.append(r.ttft_s)
            if r.tpot_s is not None:
                tpot.append(r.tpot_s)
        _maybe_example(s, r)
    s.metrics = {
        "input rail blocked the prompts it must block": {
            "value": blocked_right / blocked_expected if blocked_expected else None,
            "count": blocked_right,
            "of": blocked_expected,
        },
        "rail verdicts by kind": dict(reasons),
        "redacted chunks": redactions,
        "output tokens": tokens,
        "output tokens/s (all prompts together)": round(tokens / s.seconds, 1) if s.seconds else None,
        "TTFT p50 ms": _round(percentile_ms(ttft, 50)),
        "TPOT p50 ms": _round(percentile_ms(tpot, 50)),
    }
    return s


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 2)


def _maybe_example(s: PipelineSummary, r: Any) -> None:
    if r.redactions:
        kind = "redacted"
    elif r.outcome == "stopped":
        kind = "stopped: " + r.reasons[-1].split(":")[0]
    else:
        kind = r.outcome
    if any(e["kind"] == kind for e in s.examples):
        return
    prompt = r.prompt if len(r.prompt) < 60 else r.prompt[:57] + "..."
    lines = [f"shown: {r.text.strip()[:300]!r}"]
    if r.raw_text and r.raw_text != r.text:
        lines.append(f"model: {r.raw_text.strip()[:300]!r}")
    lines.append(
        "rails: " + ("; ".join(r.reasons) if r.reasons else "none fired (finish: " + str(r.finish_reason) + ")")
    )
    s.examples.append({"kind": kind, "title": f"prompt {prompt!r} -> {r.outcome}", "lines": lines, "run_id": r.run_id})
