"""Per-request sampling and stopping parameters (vLLM's `SamplingParams`, a subset)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class SamplingParams:
    """How one request samples and when it stops.

    temperature: 0 means greedy (argmax); > 0 divides the logits before softmax.
    top_k: keep the k most likely tokens; 0 or -1 disables.
    top_p: keep the smallest set of tokens whose probability mass reaches top_p; 1.0 disables.
    seed: seeds this request's own random generator, so its samples do not depend on which
        other requests share its batches (nor on preemption); `None` draws a random seed.
    max_tokens: most generated tokens (finish reason "length"); None: up to the rest of the
        context (`max_model_len` minus the prompt), as vLLM does when a request gives none.
    min_tokens: fewest generated tokens before EOS, `stop_token_ids` or stop strings may end the
        request: EOS and stop token ids are masked out of the logits until then (vLLM's
        `min_tokens`, transformers' `min_new_tokens`).
    stop: strings that end generation when they appear in the output text (finish reason
        "stop"); the matched string is cut from the text unless include_stop_str_in_output.
    stop_token_ids: token ids that end generation (kept in token ids, not shown in text).
    ignore_eos: keep generating past the tokenizer's EOS token (benchmarks use it).
    skip_special_tokens: leave special tokens out of the detokenised text.
    """

    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0
    seed: int | None = None
    max_tokens: int | None = 16
    min_tokens: int = 0
    stop: list[str] = field(default_factory=list)
    stop_token_ids: list[int] = field(default_factory=list)
    ignore_eos: bool = False
    include_stop_str_in_output: bool = False
    skip_special_tokens: bool = True

    def __post_init__(self) -> None:
        if isinstance(self.stop, str):
            self.stop = [self.stop]
        if not (self.temperature >= 0.0):
            raise ValueError(f"SamplingParams.temperature must be >= 0, got {self.temperature}")
        if self.top_k < -1:
            raise ValueError(f"SamplingParams.top_k must be -1, 0 (off) or >= 1, got {self.top_k}")
        if not (0.0 < self.top_p <= 1.0):
            raise ValueError(f"SamplingParams.top_p must be in (0, 1], got {self.top_p}")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise ValueError(f"SamplingParams.max_tokens must be >= 1 or None, got {self.max_tokens}")
        if not isinstance(self.min_tokens, int) or self.min_tokens < 0:
            raise ValueError(f"SamplingParams.min_tokens must be an int >= 0, got {self.min_tokens!r}")
        if self.max_tokens is not None and self.min_tokens > self.max_tokens:
            raise ValueError(
                f"SamplingParams.min_tokens ({self.min_tokens}) must not exceed max_tokens ({self.max_tokens})"
            )
        if any(not isinstance(s, str) or s == "" for s in self.stop):
            raise ValueError(f"SamplingParams.stop must be non-empty strings, got {self.stop!r}")
        if any(not isinstance(t, int) or t < 0 for t in self.stop_token_ids):
            raise ValueError(f"SamplingParams.stop_token_ids must be non-negative ints, got {self.stop_token_ids!r}")

    @property
    def greedy(self) -> bool:
        """True when sampling reduces to argmax."""
        return self.temperature == 0.0 or self.top_k == 1
