"""Plain data returned by the engine: per-request outputs and per-step statistics."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field


@dataclass(slots=True)
class RequestOutput:
    """What one request produced in one step (a streaming delta) and so far.

    delta_text / delta_token_ids: new since this request's previous output.
    text / token_ids: all generated so far (token_ids include a stop token id; text never
    includes special tokens or a cut stop string).
    finish_reason: None while running, then "stop" | "length" | "abort".
    stop_reason: the stop string or stop token id that ended it, if any.
    Times are seconds (`time.perf_counter()` clock); None until they happen.
    merged_steps: None for the output of one engine step; for an output that merges consecutive
    outputs (`merge_outputs`, e.g. a Ray generation replica's stream interval), each merged step's
    `(new token count, delta_text)` in order, so a caller can still judge the text step by step.
    """

    request_id: str
    delta_text: str
    delta_token_ids: list[int]
    text: str
    token_ids: list[int]
    num_prompt_tokens: int
    num_cached_tokens: int
    finished: bool = False
    finish_reason: str | None = None
    stop_reason: int | str | None = None
    arrival_time: float = 0.0
    first_scheduled_time: float | None = None
    first_token_time: float | None = None
    finished_time: float | None = None
    num_preemptions: int = 0
    merged_steps: tuple[tuple[int, str], ...] | None = None

    def step_deltas(self) -> list[tuple[int, str]]:
        """`(tokens generated so far, delta_text)` of each engine step this output covers, in order: one
        item for an output of one step, one per merged step for a merged output (its last is this one's)."""
        if not self.merged_steps:
            return [(len(self.token_ids), self.delta_text)]
        out, total = [], len(self.token_ids) - sum(n for n, _ in self.merged_steps)
        for n, text in self.merged_steps:
            total += n
            out.append((total, text))
        return out

    @property
    def ttft(self) -> float | None:
        """Time to first token (seconds), queue time included."""
        return None if self.first_token_time is None else self.first_token_time - self.arrival_time

    @property
    def e2e_latency(self) -> float | None:
        return None if self.finished_time is None else self.finished_time - self.arrival_time

    @property
    def queue_time(self) -> float | None:
        return None if self.first_scheduled_time is None else self.first_scheduled_time - self.arrival_time

    @property
    def tpot(self) -> float | None:
        """Mean time per output token after the first (seconds); None for fewer than two tokens."""
        n = len(self.token_ids)
        if self.finished_time is None or self.first_token_time is None or n < 2:
            return None
        return (self.finished_time - self.first_token_time) / (n - 1)


def merge_outputs(outs: list[RequestOutput]) -> RequestOutput:
    """Consecutive outputs of one request as one: the last one's totals and finish, the deltas joined (what
    a caller that had read them one by one would have), each step's delta kept in `merged_steps`."""
    if len(outs) == 1:
        return outs[0]
    steps = tuple(st for o in outs for st in (o.merged_steps or ((len(o.delta_token_ids), o.delta_text),)))
    return dataclasses.replace(
        outs[-1],
        delta_text="".join(o.delta_text for o in outs),
        delta_token_ids=[t for o in outs for t in o.delta_token_ids],
        merged_steps=steps,
    )


@dataclass(slots=True)
class FinishedStats:
    """Latency record of one finished request (seconds), for metrics."""

    request_id: str
    finish_reason: str
    num_prompt_tokens: int
    num_generation_tokens: int
    e2e_latency: float
    queue_time: float | None
    ttft: float | None
    inter_token_latencies: list[float]


@dataclass(slots=True)
class StepOutput:
    """Everything one `LLMEngine.step()` did, as plain data (metrics are derived from it).

    outputs: one RequestOutput per request that produced text/tokens or finished this step.
    num_prefill_tokens / num_decode_tokens: tokens computed. num_generated: tokens sampled.
    first_token_latencies: TTFTs (seconds) of requests that got their first token this step.
    inter_token_latencies: gaps (seconds) between consecutive tokens observed this step.
    kv_*: block-manager state after the step. prefix_cache_*: token counts added this step.
    """

    outputs: list[RequestOutput] = field(default_factory=list)
    finished: list[FinishedStats] = field(default_factory=list)
    num_prefill_tokens: int = 0
    num_decode_tokens: int = 0
    num_generated: int = 0
    num_preempted: int = 0
    num_running: int = 0
    num_waiting: int = 0
    kv_blocks_used: int = 0
    kv_blocks_total: int = 0
    kv_tokens: int = 0
    prefix_cache_queries: int = 0
    prefix_cache_hits: int = 0
    first_token_latencies: list[float] = field(default_factory=list)
    inter_token_latencies: list[float] = field(default_factory=list)
    step_seconds: float = 0.0

    @property
    def kv_cache_usage(self) -> float:
        return self.kv_blocks_used / self.kv_blocks_total if self.kv_blocks_total else 0.0
