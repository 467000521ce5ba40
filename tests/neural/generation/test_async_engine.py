"""Streaming API: deltas, concurrent streams, abort (client disconnect) frees KV blocks, full queue."""

from __future__ import annotations

import asyncio
import time

import pytest

from neural.errors import QueueFullError
from neural.generation import AsyncLLMEngine, EngineConfig, LLMEngine, SamplingParams


@pytest.fixture
def engine(llama_dir):
    eng = AsyncLLMEngine(LLMEngine(llama_dir, EngineConfig(device="cpu", block_size=4)), max_pending_requests=8)
    yield eng
    eng.shutdown()


async def _collect(engine, prompt, params, rid=None):
    deltas, last = [], None
    async for out in engine.generate(prompt, params, request_id=rid):
        deltas.append(out)
        last = out
    return deltas, last


async def test_stream_deltas_add_up_and_match_offline(engine, llama_dir, make_prompts):
    prompts = make_prompts(4, seed=21, lo=5, hi=30)
    params = SamplingParams(temperature=0, max_tokens=16, ignore_eos=True)
    results = await asyncio.gather(*[_collect(engine, p, params) for p in prompts])
    offline = LLMEngine(llama_dir, EngineConfig(device="cpu", block_size=4)).generate(prompts, params)
    for (deltas, last), ref in zip(results, offline):
        assert last.finished and last.finish_reason == "length"
        assert [t for d in deltas for t in d.delta_token_ids] == last.token_ids == ref.token_ids
        assert "".join(d.delta_text for d in deltas) == last.text == ref.text
        assert last.ttft is not None and last.ttft >= 0 and last.tpot is not None
    assert engine.num_used_blocks == 0


async def test_disconnect_aborts_and_frees_blocks(engine, make_prompts):
    prompt = make_prompts(1, seed=22, lo=30, hi=30)[0]
    params = SamplingParams(temperature=0, max_tokens=200, ignore_eos=True)
    agen = engine.generate(prompt, params, request_id="gone")
    first = await agen.__anext__()
    assert not first.finished
    assert engine.num_used_blocks > 0
    await agen.aclose()  # what a web framework does when the client disconnects
    deadline = time.monotonic() + 60  # the engine thread frees them (was 200 x 10 ms: short on a loaded machine)
    while (engine.num_used_blocks or engine.num_unfinished_requests) and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
    assert engine.num_used_blocks == 0 and engine.num_unfinished_requests == 0


async def test_cancelled_task_aborts(engine, make_prompts):
    prompt = make_prompts(1, seed=23, lo=20, hi=20)[0]
    started = asyncio.Event()

    async def consume():
        async for _ in engine.generate(
            prompt, SamplingParams(temperature=0, max_tokens=200, ignore_eos=True), request_id="x"
        ):
            started.set()

    task = asyncio.create_task(consume())
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await engine.abort("x")  # idempotent; returns after the engine thread processed aborts
    assert engine.num_used_blocks == 0


async def test_full_queue_refuses_without_dropping(engine, make_prompts):
    prompts = make_prompts(9, seed=24, lo=5, hi=10)
    params = SamplingParams(temperature=0, max_tokens=150, ignore_eos=True)
    gens = [engine.generate(p, params) for p in prompts[:8]]
    firsts = [await g.__anext__() for g in gens]  # 8 admitted (the limit)
    with pytest.raises(QueueFullError):
        await engine.generate(prompts[8], params).__anext__()
    for g, first in zip(gens, firsts):
        n = len(first.delta_token_ids)
        async for out in g:
            n += len(out.delta_token_ids)
        assert n == 150  # every admitted request completes


async def test_bad_request_raises_in_caller(engine):
    with pytest.raises(ValueError, match="exceeds max_model_len"):
        await engine.generate([1, 2, 3], SamplingParams(max_tokens=10_000)).__anext__()
    with pytest.raises(ValueError, match="outside the vocabulary"):
        await engine.generate([10**6], SamplingParams()).__anext__()
