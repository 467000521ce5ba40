"""One request's state inside the engine: its tokens, KV-cache block table, status and timings."""

from __future__ import annotations

import enum
import random
from dataclasses import dataclass, field

import torch

from .sampling_params import SamplingParams


class SequenceStatus(enum.Enum):
    WAITING = "waiting"  # in the waiting queue (new, or preempted and to be recomputed)
    RUNNING = "running"  # holds KV-cache blocks and is scheduled every step
    FINISHED = "finished"


@dataclass(slots=True)
class RequestTimes:
    """Wall-clock timestamps (seconds, `time.perf_counter()`) of one request's life."""

    arrival: float
    first_scheduled: float | None = None
    first_token: float | None = None
    last_token: float | None = None
    finished: float | None = None
    token_times: list[float] = field(default_factory=list)


class Sequence:
    """A request being generated.

    `token_ids` holds the prompt followed by the generated tokens. `num_computed_tokens` counts
    the leading tokens whose keys and values are in the KV cache (cache hits included);
    `block_table[i]` is the KV-cache block holding tokens `[i*block_size, (i+1)*block_size)`.
    Preemption by recompute resets `num_computed_tokens` and the block table but keeps the
    generated tokens and the random generator, so the request resumes where it stopped.
    """

    __slots__ = (
        "request_id",
        "token_ids",
        "num_prompt_tokens",
        "params",
        "status",
        "num_computed_tokens",
        "block_table",
        "num_cached_tokens",
        "generator",
        "times",
        "finish_reason",
        "stop_reason",
        "num_preemptions",
        "detok",
    )

    def __init__(self, request_id: str, prompt_token_ids: list[int], params: SamplingParams, arrival: float) -> None:
        self.request_id = request_id
        self.token_ids: list[int] = list(prompt_token_ids)
        self.num_prompt_tokens = len(prompt_token_ids)
        self.params = params
        self.status = SequenceStatus.WAITING
        self.num_computed_tokens = 0
        self.block_table: list[int] = []
        self.num_cached_tokens = 0  # prompt tokens served from the prefix cache (first allocation)
        seed = params.seed if params.seed is not None else random.getrandbits(63)
        self.generator = torch.Generator().manual_seed(seed)
        self.times = RequestTimes(arrival=arrival)
        self.finish_reason: str | None = None  # "stop" | "length" | "abort"
        self.stop_reason: int | str | None = None
        self.num_preemptions = 0
        self.detok = None  # set by the engine: an IncrementalDetokenizer

    def __len__(self) -> int:
        return len(self.token_ids)

    @property
    def num_output_tokens(self) -> int:
        return len(self.token_ids) - self.num_prompt_tokens

    @property
    def output_token_ids(self) -> list[int]:
        return self.token_ids[self.num_prompt_tokens :]

    @property
    def is_finished(self) -> bool:
        return self.status is SequenceStatus.FINISHED

    def __repr__(self) -> str:
        return (
            f"Sequence({self.request_id!r}, {self.status.value}, tokens={len(self.token_ids)}, "
            f"computed={self.num_computed_tokens}, blocks={len(self.block_table)})"
        )
