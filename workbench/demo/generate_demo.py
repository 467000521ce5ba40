"""Part 3 of `workbench demo`: `pipelines/demo_generate.yaml`, the demo language model streamed
through rules acting as rails (an input gate, then rails inside the decode at each line end)."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
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
    """Run `pipelines/demo_generate.yaml` on every demo prompt concurrently (continuous batching).

    Checks the input rail against the prompts' known outcomes (`blocked`), and counts outcomes,
    rail reasons, redactions, TTFT/TPOT, running sequences per step, rule firings, and model calls
    the input rail kept from running. `on_text(index, chunk)` streams what users are shown of the
    first prompt that is not expected to be blocked (a final "\n" ends it).
    """
    import asyncio

    s = PipelineSummary(PIPELINE, "generation: demo LM streamed through rules as output rails")
    reason = generation_unavailable()
    if reason is not None:
        s.unavailable = reason
        return s
    prompts = PROMPTS if not quick else [p for p in PROMPTS if p["expect"] == "blocked"][:1] + PROMPTS[:3]
    s.inputs = len(prompts)
    stream_index = next((i for i, p in enumerate(prompts) if p["expect"] is None), -1)
    done = 0
    t0 = time.perf_counter()

    async def one(i: int, p: dict[str, Any]) -> Any:
        nonlocal done
        inputs = {"prompt": p["prompt"], "seed": i}
        try:
            if on_text is not None and i == stream_index:
                result = None
                async for event in wb.stream(PIPELINE, inputs, explain=True):
                    if event["event"] == "text":
                        on_text(i, event.get("delta", event.get("text", "")))
                    elif event["event"] == "result":
                        result = event["run"]
                on_text(i, "\n")  # the end of the streamed answer
                r = _Result.of(result)
            else:
                r = _Result.of((await wb.run(PIPELINE, inputs, explain=True)).to_dict())
        except Exception as exc:  # reported per prompt; the others go on
            r = exc
        done += 1
        if progress:
            progress(done, len(prompts))
        return r

    results = await asyncio.gather(*(one(i, p) for i, p in enumerate(prompts)))
    s.seconds = time.perf_counter() - t0
    reasons: Counter = Counter()
    ttft, tpot = [], []
    tokens = redactions = blocked_right = blocked_expected = 0
    for p, r in zip(prompts, results):
        if isinstance(r, BaseException):
            s.failed += 1
            s.errors.append(f"{p['prompt'][:30]!r}: {r}")
            continue
        r.prompt = p["prompt"]
        r.firings = sum(1 for e in wb.get_trace(r.run_id) if e["kind"] == "rule_firing") if r.run_id else 0
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


@dataclass(slots=True)
class _Result:
    """What the report reads of one demo_generate run."""

    run_id: str | None
    outcome: str
    text: str
    raw_text: str
    finish_reason: str | None
    reasons: list[str]
    redactions: int
    completion_tokens: int
    ttft_s: float | None
    tpot_s: float | None
    latency_s: float
    running_seen: list[int] = field(default_factory=list)
    prompt: str = ""
    firings: int = 0

    @classmethod
    def of(cls, run: dict[str, Any] | None) -> _Result:
        if run is None or run["status"] != "succeeded":
            raise RuntimeError((run or {}).get("error") or "the run gave no result")
        out = run["outputs"]
        gens = (run.get("explanation") or {}).get("generations") or [{}]
        gen = gens[0]
        verdicts = gen.get("verdicts") or []
        reasons = [v["reason"] for v in verdicts] if verdicts else ([out["reason"]] if out.get("reason") else [])
        return cls(
            run_id=run["run_id"],
            outcome=out["outcome"],
            text=out["text"] or "",
            raw_text=gen.get("raw_text") or "",
            finish_reason=out.get("finish_reason"),
            reasons=reasons,
            redactions=sum(v["action"] in ("redact", "rewrite") for v in verdicts),
            completion_tokens=(out.get("usage") or {}).get("completion_tokens", 0),
            ttft_s=gen.get("ttft_s"),
            tpot_s=gen.get("tpot_s"),
            latency_s=run["duration_s"],
            running_seen=list(gen.get("running") or []),
        )


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
