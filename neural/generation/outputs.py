"""Plain data returned by the engine: per-request outputs and per-step statistics."""

from __future__ import annotations

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
