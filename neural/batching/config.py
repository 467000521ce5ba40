"""Configuration of a dynamic batcher (the knobs of Triton's `dynamic_batching` block)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class BatcherConfig:
    """How a model's dynamic batcher forms batches.

    - `max_batch_size`: most requests per model call.
    - `max_queue_delay_ms`: how long the oldest queued request may wait for a batch to fill
      before a partial batch is run (Triton: `max_queue_delay_microseconds`).
    - `max_queue_size`: most requests waiting (not yet running); more raises `QueueFullError`.
    - `buckets`: sequence-length bucket bounds (ascending). Requests are batched with requests of
      the same or a smaller bucket and padded to the bucket bound; `None` pads to the longest
      request of each batch. Lengths above the last bound form one overflow bucket.
    - `pad_to_bucket`: pad to the bucket bound (fixed shapes, e.g. for compiled graphs) when True,
      or only to the longest request of the batch when False (less padding on CPU).
    - `default_timeout_s`: deadline for requests that give none (`None`: no deadline).
    - `fill_from_smaller_buckets`: when the oldest request's bucket cannot fill a batch, add
      requests of smaller buckets (padded up to it). Good where padding is cheap (GPU); on a
      compute-bound CPU the padding can cost more than the extra requests save.
    - `exact_lengths`: batch only requests of identical length and never pad (for models that do
      not mask padding); `buckets` is then ignored.
    """

    max_batch_size: int = 32
    max_queue_delay_ms: float = 5.0
    max_queue_size: int = 1024
    buckets: tuple[int, ...] | None = (16, 32, 64, 128, 256, 512)
    pad_to_bucket: bool = True
    default_timeout_s: float | None = None
    exact_lengths: bool = False
    fill_from_smaller_buckets: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.max_batch_size, int) or self.max_batch_size < 1:
            raise ValueError(f"max_batch_size must be an integer >= 1, got {self.max_batch_size!r}")
        if not (self.max_queue_delay_ms >= 0):
            raise ValueError(f"max_queue_delay_ms must be >= 0, got {self.max_queue_delay_ms!r}")
        if not isinstance(self.max_queue_size, int) or self.max_queue_size < 1:
            raise ValueError(f"max_queue_size must be an integer >= 1, got {self.max_queue_size!r}")
        if self.buckets is not None:
            self.buckets = tuple(int(b) for b in self.buckets)
            if not self.buckets or any(b < 1 for b in self.buckets) or list(self.buckets) != sorted(set(self.buckets)):
                raise ValueError(f"buckets must be strictly ascending positive lengths, got {self.buckets!r}")
        if self.default_timeout_s is not None and not (self.default_timeout_s > 0):
            raise ValueError(f"default_timeout_s must be > 0 or None, got {self.default_timeout_s!r}")
