"""Plain records of what a batcher executed: one `BatchRecord` per model call, and totals."""

from __future__ import annotations

import collections
from dataclasses import dataclass, field

BATCH_SIZES_KEPT = 10_000  # `BatcherStats.batch_sizes` keeps the sizes of this many most recent calls


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

    `batches` counts model calls, successful or not; `batch_sizes` holds the sizes of the last
    `BATCH_SIZES_KEPT` calls in order (a list of every call's size grew by one entry per batch for as long as
    the server ran); `mean_batch_size` and `max_batch_size` are over all calls.
    """

    batches: int = 0
    requests: int = 0
    failed_batches: int = 0
    rejected: int = 0
    timed_out: int = 0
    cancelled: int = 0
    batch_sizes: collections.deque[int] = field(default_factory=lambda: collections.deque(maxlen=BATCH_SIZES_KEPT))
    largest_batch: int = 0

    @property
    def calls(self) -> int:
        """Same as `batches`: the number of times the model was called."""
        return self.batches

    @property
    def mean_batch_size(self) -> float:
        return self.requests / self.batches if self.batches else 0.0

    @property
    def max_batch_size(self) -> int:
        return self.largest_batch
