"""Continuous-batching scheduler: waiting and running queues, chunked prefill, preemption.

Each engine step gets a token budget (`max_num_batched_tokens`). Running sequences are served
first, oldest first: one token each when decoding, the next chunk when still prefilling. When
the block manager cannot give a running sequence the slots it needs, the newest running
sequence is preempted by recompute (its blocks freed, its tokens kept; it goes back to the
front of the waiting queue) until the request fits or is itself the one preempted. Then, if
nothing was preempted, waiting sequences are admitted in arrival order while budget, free
blocks and `max_num_seqs` allow, each starting after its prefix-cache hits. A step therefore
mixes prefill and decode tokens. (After vLLM v1's scheduler; nano-vllm has the same shape.)
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from .block_manager import BlockManager
from .sequence import Sequence, SequenceStatus


@dataclass(slots=True)
class SchedulerOutput:
    """What one step computes: `(sequence, number of new tokens)` pairs, in batch order."""

    scheduled: list[tuple[Sequence, int]] = field(default_factory=list)
    preempted: list[Sequence] = field(default_factory=list)
    num_prefill_tokens: int = 0
    num_decode_tokens: int = 0

    @property
    def num_tokens(self) -> int:
        return self.num_prefill_tokens + self.num_decode_tokens

    @property
    def is_empty(self) -> bool:
        return not self.scheduled


class Scheduler:
    """Decides, each step, which sequences run and how many tokens each computes."""

    def __init__(self, block_manager: BlockManager, max_num_seqs: int, max_num_batched_tokens: int) -> None:
        self.block_manager = block_manager
        self.max_num_seqs = max_num_seqs
        self.max_num_batched_tokens = max_num_batched_tokens
        self.waiting: deque[Sequence] = deque()
        self.running: list[Sequence] = []
        self.num_preemptions = 0  # cumulative

    def add(self, seq: Sequence) -> None:
        seq.status = SequenceStatus.WAITING
        self.waiting.append(seq)

    def has_unfinished(self) -> bool:
        return bool(self.waiting or self.running)

    def schedule(self) -> SchedulerOutput:
        """Choose this step's batch (see the module docstring). Never blocks; may be empty."""
        out = SchedulerOutput()
        budget = self.max_num_batched_tokens
        bm = self.block_manager
        i = 0
        while i < len(self.running) and budget > 0:
            seq = self.running[i]
            num_new = min(len(seq.token_ids) - seq.num_computed_tokens, budget)
            scheduled = True
            while not bm.append_slots(seq, num_new):
                victim = self.running.pop()
                self._preempt(victim)
                out.preempted.append(victim)
                if victim is seq:
                    scheduled = False
                    break
            if not scheduled:
                break
            self._count(out, seq, num_new)
            out.scheduled.append((seq, num_new))
            budget -= num_new
            i += 1
        if not out.preempted:
            while self.waiting and budget > 0 and len(self.running) < self.max_num_seqs:
                seq = self.waiting[0]
                num_new = bm.allocate_waiting(seq, budget)
                if num_new is None:
                    break
                self.waiting.popleft()
                seq.status = SequenceStatus.RUNNING
                self.running.append(seq)
                self._count(out, seq, num_new)
                out.scheduled.append((seq, num_new))
                budget -= num_new
        return out

    @staticmethod
    def _count(out: SchedulerOutput, seq: Sequence, num_new: int) -> None:
        # a single new token at the end of the sequence is a decode; anything else is (re)prefill
        if num_new == 1 and seq.num_computed_tokens == len(seq.token_ids) - 1 and seq.num_output_tokens > 0:
            out.num_decode_tokens += 1
        else:
            out.num_prefill_tokens += num_new

    def _preempt(self, seq: Sequence) -> None:
        self.block_manager.free(seq)
        seq.status = SequenceStatus.WAITING
        seq.num_preemptions += 1
        self.num_preemptions += 1
        self.waiting.appendleft(seq)

    def finish(self, seq: Sequence) -> None:
        """Remove a finished or aborted sequence from its queue and free its blocks now."""
        if seq.status is SequenceStatus.RUNNING:
            self.running.remove(seq)
            self.block_manager.free(seq)
        elif seq.status is SequenceStatus.WAITING:
            try:
                self.waiting.remove(seq)
            except ValueError:
                pass
        seq.status = SequenceStatus.FINISHED
