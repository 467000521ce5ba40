"""Plain records of what a batcher executed: one `BatchRecord` per model call, and totals."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True, frozen=True)
class BatchRecord:
    """One model call: `size` requests padded to `pad_to` (None: no sequence axis), times in seconds."""

    batch_id: int
    size: int
    pad_to: int | None
    started_at: float  # time.monotonic() when the model call began
    compute_s: float
    queue_s_max: float
    ok: bool
    error: str | None = None


@dataclass(slots=True)
class BatcherStats:
    """Totals since start (or the last `reset_stats()`): how many batches ran and their sizes.

    `batches` counts model calls, successful or not; `batch_sizes` lists each call's size in order.
    """

    batches: int = 0
    requests: int = 0
    failed_batches: int = 0
    rejected: int = 0
    timed_out: int = 0
    cancelled: int = 0
    batch_sizes: list[int] = field(default_factory=list)

    @property
    def calls(self) -> int:
        """Same as `batches`: the number of times the model was called."""
        return self.batches

    @property
    def mean_batch_size(self) -> float:
        return sum(self.batch_sizes) / len(self.batch_sizes) if self.batch_sizes else 0.0

    @property
    def max_batch_size(self) -> int:
        return max(self.batch_sizes, default=0)
