"""The engine loop: add requests, step (schedule -> forward -> sample -> stop checks), abort.

One `step()` runs one batch through the model and returns a `StepOutput` (plain data: the
requests' deltas, token counts, KV-cache state); metrics are derived from it. Finished and
aborted requests free their KV-cache blocks within the same call.
"""

from __future__ import annotations

import logging
import math
import time
from pathlib import Path

import torch

from ..device import resolve_device
from .block_manager import BlockManager
from .config import EngineConfig
from .detokenizer import IncrementalDetokenizer
from .model_config import ModelSpec, load_spec
from .model_runner import ModelRunner
from .outputs import FinishedStats, RequestOutput, StepOutput
from .sampler import Sampler
from .sampling_params import SamplingParams
from .scheduler import Scheduler
from .sequence import Sequence

log = logging.getLogger("neural.generation")


class LLMEngine:
    """Continuous-batching generation engine for one causal LM in a Hugging Face directory.

    model_dir: config.json + *.safetensors (+ tokenizer.json for text prompts, text outputs and
    stop strings). Raises FileNotFoundError / ValueError (see `load_spec`) for unusable
    directories, ValueError when the KV cache cannot hold one sequence of `max_model_len`.
    """

    def __init__(self, model_dir: str | Path, config: EngineConfig | None = None, metrics=None) -> None:
        self.config = config = config or EngineConfig()
        self.model_dir = Path(model_dir)
        self.spec: ModelSpec = load_spec(self.model_dir)
        self.device = resolve_device(config.device)
        if config.num_threads is not None and self.device == "cpu":
            torch.set_num_threads(config.num_threads)
        limit = self.spec.max_position_embeddings
        if self.spec.sliding_window:
            limit = min(limit, self.spec.sliding_window)  # sliding-window masking is not implemented
        if config.max_model_len is not None and config.max_model_len > limit:
            raise ValueError(
                f"EngineConfig.max_model_len={config.max_model_len} exceeds the model's limit {limit} "
                f"(max_position_embeddings / sliding_window in {self.model_dir / 'config.json'})"
            )
        self.max_model_len = config.max_model_len or limit
        blocks_per_seq = math.ceil(self.max_model_len / config.block_size)
        num_blocks = config.num_kv_blocks or blocks_per_seq * config.max_num_seqs
        if num_blocks < blocks_per_seq:
            raise ValueError(
                f"EngineConfig.num_kv_blocks={num_blocks} cannot hold one sequence of max_model_len="
                f"{self.max_model_len} tokens ({blocks_per_seq} blocks of {config.block_size})"
            )
        self.runner = ModelRunner(self.spec, self.model_dir, num_blocks, config.block_size, config.dtype, self.device)
        self.block_manager = BlockManager(num_blocks, config.block_size, config.enable_prefix_caching)
        self.scheduler = Scheduler(self.block_manager, config.max_num_seqs, config.max_num_batched_tokens)
        self.sampler = Sampler()
        from .tokenizer import load_tokenizer

        self.tokenizer = load_tokenizer(self.model_dir)  # tokenizer.json, vocab/merges or sentencepiece
        self.eos_token_ids = set(self.spec.eos_token_ids)
        self.requests: dict[str, Sequence] = {}
        self.metrics = metrics
        log.info(
            "generation engine: %s (%s) on %s, %d KV blocks x %d tokens (%.1f MiB)",
            self.model_dir,
            self.spec.model_type,
            self.device,
            num_blocks,
            config.block_size,
            self.runner.kv_cache_bytes / 2**20,
        )

    # ---- state ----------------------------------------------------------------------------
    @property
    def num_kv_blocks(self) -> int:
        return self.block_manager.num_blocks

    @property
    def num_free_blocks(self) -> int:
        """KV-cache blocks not referenced by any request (cached prefixes count as free)."""
        return self.block_manager.num_free_blocks

    @property
    def num_used_blocks(self) -> int:
        """KV-cache blocks referenced by running requests."""
        return self.block_manager.num_used_blocks

    def has_unfinished_requests(self) -> bool:
        return self.scheduler.has_unfinished()

    def encode(self, text: str) -> list[int]:
        """Token ids of `text` (no special tokens added). Raises RuntimeError without a tokenizer."""
        if self.tokenizer is None:
            raise RuntimeError(f"{self.model_dir}: no tokenizer files; pass prompt token ids instead of text")
        return self.tokenizer.encode(text, add_special_tokens=False).ids

    def apply_chat_template(self, messages: list[dict[str, str]], add_generation_prompt: bool = True) -> str:
        """Prompt text for chat `messages` with the model's chat template (`chat.apply_chat_template`).

        Raises `chat.ChatTemplateError` (a ValueError) when the folder has no chat template, a
        message is malformed or the template refuses the messages.
        """
        from .chat import apply_chat_template

        return apply_chat_template(self.model_dir, messages, add_generation_prompt, fallback=False)

    # ---- requests -------------------------------------------------------------------------
    def make_sequence(
        self,
        request_id: str,
        prompt: str | list[int],
        params: SamplingParams | None = None,
        arrival_time: float | None = None,
    ) -> Sequence:
        """Validate and tokenise a request without queueing it (safe from any thread).

        Raises ValueError for an empty or too long prompt, token ids outside the vocabulary, or
        stop strings without a tokenizer.
        """
        params = params or SamplingParams()
        ids = self.encode(prompt) if isinstance(prompt, str) else list(prompt)
        if not ids:
            raise ValueError(f"request {request_id!r}: the prompt is empty")
        bad = [t for t in ids if not (isinstance(t, int) and 0 <= t < self.spec.vocab_size)]
        if bad:
            raise ValueError(
                f"request {request_id!r}: prompt token ids {bad[:5]} outside the vocabulary [0, {self.spec.vocab_size})"
            )
        if len(ids) + (params.max_tokens or 1) > self.max_model_len:
            want = "one generated token" if params.max_tokens is None else f"max_tokens ({params.max_tokens})"
            raise ValueError(
                f"request {request_id!r}: prompt ({len(ids)} tokens) + {want} "
                f"exceeds max_model_len {self.max_model_len}"
            )
        if len(ids) + params.min_tokens > self.max_model_len:
            raise ValueError(
                f"request {request_id!r}: prompt ({len(ids)} tokens) + min_tokens ({params.min_tokens}) "
                f"exceeds max_model_len {self.max_model_len}"
            )
        if params.stop and self.tokenizer is None:
            raise ValueError(
                f"request {request_id!r}: stop strings need a tokenizer; {self.model_dir} has no tokenizer files"
            )
        seq = Sequence(request_id, ids, params, arrival_time if arrival_time is not None else time.perf_counter())
        if self.tokenizer is not None:
            seq.detok = IncrementalDetokenizer(
                self.tokenizer, ids, params.stop, params.include_stop_str_in_output, params.skip_special_tokens
            )
        return seq

    def add_sequence(self, seq: Sequence) -> None:
        """Queue a sequence made by `make_sequence`. Raises ValueError for a duplicate request id."""
        if seq.request_id in self.requests:
            raise ValueError(f"request id {seq.request_id!r} is already in the engine")
        self.requests[seq.request_id] = seq
        self.scheduler.add(seq)
        if self.metrics is not None:
            self.metrics.admitted(seq.num_prompt_tokens)

    def add_request(
        self,
        request_id: str,
        prompt: str | list[int],
        params: SamplingParams | None = None,
        arrival_time: float | None = None,
    ) -> None:
        """Validate and queue a request (see `make_sequence`, `add_sequence` for the errors)."""
        self.add_sequence(self.make_sequence(request_id, prompt, params, arrival_time))

    def abort_request(self, request_id: str) -> RequestOutput | None:
        """Cancel a request now: its KV-cache blocks are freed before this returns.

        Returns its final output (finish_reason "abort"), or None for an unknown/finished id.
        """
        seq = self.requests.pop(request_id, None)
        if seq is None:
            return None
        self.scheduler.finish(seq)
        seq.finish_reason = "abort"
        seq.times.finished = time.perf_counter()
        if self.metrics is not None:
            bm = self.block_manager
            self.metrics.aborted(
                len(self.scheduler.running),
                len(self.scheduler.waiting),
                bm.num_used_blocks / bm.num_blocks if bm.num_blocks else 0.0,
            )
        return self._output(seq, [], "")

    # ---- the step -------------------------------------------------------------------------
    def step(self) -> StepOutput:
        """Run one engine iteration; see the module docstring. Returns plain data."""
        t0 = time.perf_counter()
        bm = self.block_manager
        q0, h0 = bm.prefix_cache_queries, bm.prefix_cache_hits
        sched = self.scheduler.schedule()
        out = StepOutput(
            num_prefill_tokens=sched.num_prefill_tokens,
            num_decode_tokens=sched.num_decode_tokens,
            num_preempted=len(sched.preempted),
        )
        if not sched.is_empty:
            for seq, _ in sched.scheduled:
                if seq.times.first_scheduled is None:
                    seq.times.first_scheduled = t0
            seqs, logits = self.runner.execute(sched.scheduled)
            for seq, n in sched.scheduled:
                seq.num_computed_tokens += n
                bm.commit_computed(seq)
            self._mask_until_min_tokens(seqs, logits)
            tokens = self.sampler.sample(seqs, logits)
            now = time.perf_counter()
            out.num_generated = len(tokens)
            for seq, tok in zip(seqs, tokens):
                self._append_token(seq, tok, now, out)
        out.num_running = len(self.scheduler.running)
        out.num_waiting = len(self.scheduler.waiting)
        out.kv_blocks_used = bm.num_used_blocks
        out.kv_blocks_total = bm.num_blocks
        out.kv_tokens = sum(s.num_computed_tokens for s in self.scheduler.running)
        out.prefix_cache_queries = bm.prefix_cache_queries - q0
        out.prefix_cache_hits = bm.prefix_cache_hits - h0
        out.step_seconds = time.perf_counter() - t0
        if self.metrics is not None:
            self.metrics.observe(out)
        return out

    def _mask_until_min_tokens(self, seqs: list[Sequence], logits: torch.Tensor) -> None:
        """Set the logits of EOS (unless ignore_eos) and stop token ids to -inf for sequences that
        have generated fewer than `min_tokens` (vLLM's min-tokens logits processor). logits: [S, vocab]."""
        for i, seq in enumerate(seqs):
            p = seq.params
            if p.min_tokens and seq.num_output_tokens < p.min_tokens:
                banned = set(p.stop_token_ids) | (set() if p.ignore_eos else self.eos_token_ids)
                banned = [t for t in banned if 0 <= t < logits.shape[-1]]
                if banned:
                    with torch.inference_mode():  # the runner's logits are an inference tensor
                        logits[i, banned] = float("-inf")

    def _append_token(self, seq: Sequence, tok: int, now: float, out: StepOutput) -> None:
        seq.token_ids.append(tok)
        times = seq.times
        if times.first_token is None:
            times.first_token = now
            out.first_token_latencies.append(now - times.arrival)
        else:
            out.inter_token_latencies.append(now - times.last_token)
        times.last_token = now
        times.token_times.append(now)
        p = seq.params
        reason = None
        if tok in p.stop_token_ids or (not p.ignore_eos and tok in self.eos_token_ids):
            reason, seq.stop_reason = "stop", (tok if tok in p.stop_token_ids else None)
        elif seq.detok is not None:
            stop_str = seq.detok.add_token(tok, check_stop=seq.num_output_tokens >= p.min_tokens)
            if stop_str is not None:
                reason, seq.stop_reason = "stop", stop_str
        if reason is None and (
            (p.max_tokens is not None and seq.num_output_tokens >= p.max_tokens)
            or len(seq.token_ids) >= self.max_model_len
        ):
            reason = "length"
        delta = ""
        if seq.detok is not None:
            if reason is not None and not isinstance(seq.stop_reason, str):
                seq.detok.flush()
            delta = seq.detok.emit(finished=reason is not None)
        if reason is not None:
            seq.finish_reason = reason
            times.finished = now
            self.scheduler.finish(seq)  # frees its blocks this step
            self.requests.pop(seq.request_id, None)
            tt = times.token_times
            out.finished.append(
                FinishedStats(
                    seq.request_id,
                    reason,
                    seq.num_prompt_tokens,
                    seq.num_output_tokens,
                    now - times.arrival,
                    None if times.first_scheduled is None else times.first_scheduled - times.arrival,
                    None if times.first_token is None else times.first_token - times.arrival,
                    [b - a for a, b in zip(tt, tt[1:])],
                )
            )
        out.outputs.append(self._output(seq, [tok], delta))

    def _output(self, seq: Sequence, delta_ids: list[int], delta_text: str) -> RequestOutput:
        t = seq.times
        return RequestOutput(
            request_id=seq.request_id,
            delta_text=delta_text,
            delta_token_ids=delta_ids,
            text=seq.detok.output_text if seq.detok is not None else "",
            token_ids=seq.output_token_ids,
            num_prompt_tokens=seq.num_prompt_tokens,
            num_cached_tokens=seq.num_cached_tokens,
            finished=seq.finish_reason is not None,
            finish_reason=seq.finish_reason,
            stop_reason=seq.stop_reason,
            arrival_time=t.arrival,
            first_scheduled_time=t.first_scheduled,
            first_token_time=t.first_token,
            finished_time=t.finished,
            num_preemptions=seq.num_preemptions,
        )

    # ---- convenience ----------------------------------------------------------------------
    def generate(
        self, prompts: list[str | list[int]], params: SamplingParams | list[SamplingParams] | None = None
    ) -> list[RequestOutput]:
        """Run `prompts` to completion (offline batch); outputs in prompt order."""
        plist = params if isinstance(params, list) else [params or SamplingParams()] * len(prompts)
        if len(plist) != len(prompts):
            raise ValueError(f"generate: {len(prompts)} prompts but {len(plist)} SamplingParams")
        base = f"gen-{id(prompts)}-{time.perf_counter_ns()}"
        ids = [f"{base}-{i}" for i in range(len(prompts))]
        for rid, prompt, p in zip(ids, prompts, plist):
            self.add_request(rid, prompt, p)
        final: dict[str, RequestOutput] = {}
        while len(final) < len(ids):
            for o in self.step().outputs:
                if o.finished:
                    final[o.request_id] = o
        return [final[r] for r in ids]
