"""Scheduler: continuous batching limits, chunked prefill, mixed steps, preemption of the newest."""

from __future__ import annotations

from neural.generation.block_manager import BlockManager
from neural.generation.sampling_params import SamplingParams
from neural.generation.scheduler import Scheduler
from neural.generation.sequence import Sequence, SequenceStatus


def seq(n, rid):
    return Sequence(rid, list(range(1, n + 1)), SamplingParams(max_tokens=50), arrival=0.0)


def run_step(sched: Scheduler, out) -> None:
    """What the engine does after the forward pass: count computed tokens, sample a dummy token."""
    for s, n in out.scheduled:
        s.num_computed_tokens += n
        sched.block_manager.commit_computed(s)
        if s.num_computed_tokens == len(s.token_ids):
            s.token_ids.append(7)


def test_chunked_prefill_and_token_budget():
    sched = Scheduler(BlockManager(64, 4), max_num_seqs=8, max_num_batched_tokens=10)
    a = seq(25, "a")
    sched.add(a)
    chunks = []
    while a.num_output_tokens == 0:
        out = sched.schedule()
        assert out.num_tokens <= 10
        chunks.append(out.scheduled[0][1])
        run_step(sched, out)
    assert chunks == [10, 10, 5]


def test_steps_mix_prefill_and_decode_and_respect_max_num_seqs():
    sched = Scheduler(BlockManager(64, 4), max_num_seqs=2, max_num_batched_tokens=16)
    a, b, c = seq(5, "a"), seq(6, "b"), seq(3, "c")
    for s in (a, b, c):
        sched.add(s)
    out = sched.schedule()
    assert [(s.request_id, n) for s, n in out.scheduled] == [("a", 5), ("b", 6)]
    assert len(sched.running) == 2 and list(sched.waiting) == [c]  # max_num_seqs
    run_step(sched, out)
    sched.finish(a)
    assert a.status is SequenceStatus.FINISHED and a.block_table == []
    out = sched.schedule()
    # b decodes one token while c is prefilled in the same step
    assert [(s.request_id, n) for s, n in out.scheduled] == [("b", 1), ("c", 3)]
    assert out.num_decode_tokens == 1 and out.num_prefill_tokens == 3


def test_preempts_newest_by_recompute_and_resumes():
    bm = BlockManager(num_blocks=6, block_size=4)
    sched = Scheduler(bm, max_num_seqs=4, max_num_batched_tokens=64)
    a, b, c = seq(8, "a"), seq(8, "b"), seq(7, "c")  # 2 blocks each = all 6
    for s in (a, b, c):
        sched.add(s)
    run_step(sched, sched.schedule())
    assert bm.num_free_blocks == 0
    # every sequence now has 9 tokens for a and b (needs a 3rd block); c has 8 (fits)
    out = sched.schedule()
    assert out.preempted == [c]  # the newest goes, freeing 2 blocks for a and b
    assert c.status is SequenceStatus.WAITING and sched.waiting[0] is c and c.block_table == []
    assert c.num_computed_tokens == 0 and c.token_ids[-1] == 7  # generated token kept for recompute
    assert [s.request_id for s, _ in out.scheduled] == ["a", "b"]
    assert sched.num_preemptions == 1
    run_step(sched, out)
    sched.finish(a)
    out = sched.schedule()
    # resumed: its first block (tokens 1-4, like a's) is still in the prefix cache, the rest is recomputed
    assert ("c", 4) in [(s.request_id, n) for s, n in out.scheduled]
    assert c.num_computed_tokens == 4 and c.status is SequenceStatus.RUNNING
