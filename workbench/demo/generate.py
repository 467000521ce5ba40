"""The generation demo: the demo language model streamed through rules acting as rails.

`RailedGenerator.generate(prompt)` runs the knowledge base `demo_rails` (contract in
`knowledge_bases/demo_rails.clp`, the same one the OpenAI-compatible API's `rails` option uses):

1. input rail: `(prompt (text ...))` -> a `block` verdict answers without generating (the model
   is never called, no KV blocks are taken);
2. generation on `neural.generation.AsyncLLMEngine` (continuous batching over a paged KV cache),
   streamed; the text is released to the rails in whole words, and a line that could still
   become a speaker heading ("KING RICHARD III:") is held back until it ends, so redaction and
   the speaker stop act on whole words and lines;
3. output rail after each released chunk: `(completion (text ...) (delta ...) (tokens N)
   (finished ...))` -> `rewrite` (redaction) or `stop` (speaker change, length, content): the
   request is aborted at once, which frees its KV blocks.

Every generation is recorded in the run store as a run of `demo_generate`, with the rails'
rule firings, the gate decision and the model call (TTFT, TPOT, tokens) as trace events. The
pipeline YAML format has no generation node yet, so `demo_generate`'s version is the content
hash of this runner's configuration, the rails knowledge base version and the model version.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

PIPELINE_NAME = "demo_generate"
MODEL_NAME = "demo-lm"


@dataclass(slots=True)
class GenerationDemoConfig:
    """Sampling and rails of the generation demo.

    Attributes:
        rails: knowledge base name of the rails (see module docstring for its contract).
        max_tokens: most tokens generated per prompt (the rails usually stop earlier).
        temperature, top_p: sampling; `seed` + the prompt's index seeds each request.
        ignore_eos: keep generating past the end-of-text token, so that the rails -- not the
            model -- decide where an answer ends (the demo LM ends most speeches with it, and a
            rail that never fires shows nothing); `max_tokens` still bounds every request.
    """

    rails: str = "demo_rails"
    max_tokens: int = 120
    temperature: float = 0.8
    top_p: float = 0.95
    seed: int = 0
    ignore_eos: bool = True

    def __post_init__(self) -> None:
        if not self.rails:
            raise ValueError("GenerationDemoConfig.rails must name a knowledge base")
        if not isinstance(self.max_tokens, int) or self.max_tokens < 1:
            raise ValueError(f"GenerationDemoConfig.max_tokens must be an int >= 1, got {self.max_tokens!r}")
        if self.temperature < 0 or not 0 < self.top_p <= 1:
            raise ValueError(
                f"GenerationDemoConfig: temperature {self.temperature} must be >= 0 and top_p {self.top_p} in (0, 1]"
            )


@dataclass(slots=True)
class RailedGeneration:
    """One prompt's result.

    Attributes:
        outcome: "blocked" (input rail), "stopped" (an output rail ended it), "completed"
            (the model finished: end of speech or max_tokens).
        text: what the user was shown; `raw_text`: what the model generated before rails.
        reasons: the rails' reasons, in order; `redactions`: rewrite verdicts applied.
        firings: rule firings of the rails (all evaluations); `rail_evaluations`: evaluations.
        prompt_tokens / completion_tokens; ttft_s / tpot_s / latency_s in seconds (None if no token).
        running_seen: running sequences of the engine steps that produced this request's tokens.
    """

    prompt: str
    outcome: str
    text: str
    raw_text: str = ""
    finish_reason: str | None = None
    reasons: list[str] = field(default_factory=list)
    redactions: int = 0
    firings: int = 0
    rail_evaluations: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    ttft_s: float | None = None
    tpot_s: float | None = None
    latency_s: float = 0.0
    rails_s: float = 0.0
    running_seen: list[int] = field(default_factory=list)
    run_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def release_point(shown: str, pending: str) -> int:
    """How many characters of `pending` may go to the rails now: up to the last whitespace, but
    not into a line that so far looks like it could be a speaker heading (no lower-case letter).
    """
    cut = max(pending.rfind(" "), pending.rfind("\n")) + 1
    if cut == 0:
        return 0
    whole = shown + pending[:cut]
    line_start = whole.rfind("\n") + 1
    line = whole[line_start:]
    if line.strip() and line == line.upper() and line_start > 0:
        # the current line may still end with ':' (a new speaker): keep it back until it ends
        return max(0, line_start - len(shown))
    return cut


class RailedGenerator:
    """Streams the demo LM through the rails knowledge base and records each generation.

    Args:
        workbench: a `workbench.Workbench` (knowledge bases, store, recorder).
        engine: a `neural.generation.AsyncLLMEngine` over the demo LM (default: loaded from
            `neural.generation.DEMO_LM_DIR` on first use).
        config: `GenerationDemoConfig`.
    """

    def __init__(self, workbench: Any, engine: Any = None, config: GenerationDemoConfig | None = None) -> None:
        self.wb = workbench
        self.config = config or GenerationDemoConfig()
        self._engine = engine
        self._model_version: str | None = None
        kb = workbench.get_knowledge_base(self.config.rails)
        self.kb_version = kb.version
        self._rails_kb = kb

    # ---- model -------------------------------------------------------------------------------
    @property
    def engine(self) -> Any:
        if self._engine is None:
            from neural.generation import DEMO_LM_DIR, AsyncLLMEngine

            self._engine = AsyncLLMEngine.from_pretrained(DEMO_LM_DIR, model_name=MODEL_NAME)
        return self._engine

    @property
    def model_version(self) -> str:
        if self._model_version is None:
            from neural.hashing import hash_files

            root = Path(self.engine.engine.model_dir)
            self._model_version = hash_files(sorted(root.glob("*.safetensors")), root)
            try:
                self.wb.store.save_model(MODEL_NAME, self._model_version, "hf", "causal-lm", {})
            except Exception:  # recording the model row must not stop the demo
                pass
        return self._model_version

    @property
    def version(self) -> str:
        """Content hash of (configuration, rails knowledge base version, model version)."""
        doc = json.dumps(
            {"config": asdict(self.config), "rails": self.kb_version, "model": self.model_version}, sort_keys=True
        )
        return hashlib.sha256(doc.encode()).hexdigest()

    def close(self) -> None:
        if self._engine is not None:
            self._engine.shutdown()

    # ---- one generation ----------------------------------------------------------------------
    def _rail(self, facts: list[Any], events: list[Any], t0: float, step: str) -> tuple[dict[str, str] | None, Any]:
        from workbench.store import TraceEvent

        with self.wb.library.lease(self._rails_kb) as rails:
            result = rails.evaluate(facts)
        for f in result.firings:
            events.append(
                TraceEvent(
                    "rule_firing",
                    "rails",
                    {"rule": f.rule, "facts": list(f.facts), "step": step, "knowledge_base": self.config.rails},
                    time.perf_counter() - t0,
                )
            )
        rails = result.facts_of("rail")
        if not rails:
            return None, result
        slots = rails[-1].slots
        action = str(slots.get("action", "allow"))
        if action == "allow":
            return None, result
        return {"action": action, "text": str(slots.get("text", "")), "reason": str(slots.get("reason", ""))}, result

    async def generate(
        self, prompt: str, *, index: int = 0, on_text: Callable[[str], None] | None = None, record: bool = True
    ) -> RailedGeneration:
        """Run one prompt through input rail, streaming generation and output rails.

        Args:
            prompt: the prompt text.
            index: added to the configured seed (reproducible sampling per prompt).
            on_text: called with each chunk of text as it is shown (streaming display).
            record: write the run and its trace to the store.
        Raises:
            ValueError (a prompt the tokenizer or engine refuses), neural.errors.QueueFullError,
            RuntimeError (the engine stopped).
        """
        from rules.facts import Fact, String
        from workbench.store import TraceEvent

        t0 = time.perf_counter()
        events: list[Any] = []
        res = RailedGeneration(prompt=prompt, outcome="completed", text="")
        verdict, _ = self._rail([Fact("prompt", {"text": String(prompt)})], events, t0, "input")
        res.rail_evaluations += 1
        gate = {
            "gate": "input_rail",
            "branch": "block" if verdict and verdict["action"] == "block" else "generate",
            "reason": verdict["reason"] if verdict else "no input rail applies",
        }
        events.append(TraceEvent("gate_decision", "input_rail", gate, time.perf_counter() - t0))
        if verdict is not None and verdict["action"] == "block":
            res.outcome, res.text, res.reasons = "blocked", verdict["text"], [verdict["reason"]]
            if on_text:
                on_text(res.text)
        else:
            await self._stream(prompt, index, res, events, t0, on_text)
        res.latency_s = time.perf_counter() - t0
        res.firings = sum(1 for e in events if e.kind == "rule_firing")
        if record:
            res.run_id = await self._record(res, events, t0)
        return res

    async def _stream(
        self,
        prompt: str,
        index: int,
        res: RailedGeneration,
        events: list[Any],
        t0: float,
        on_text: Callable[[str], None] | None,
    ) -> None:
        from neural.generation import SamplingParams
        from rules.facts import Fact, String
        from workbench.store import TraceEvent

        cfg = self.config
        params = SamplingParams(
            temperature=cfg.temperature,
            top_p=cfg.top_p,
            seed=cfg.seed + index,
            max_tokens=cfg.max_tokens,
            ignore_eos=cfg.ignore_eos,
        )
        engine = self.engine
        model_version = self.model_version
        pending = ""
        last = None
        stream = engine.generate(prompt, params)
        try:
            async for out in stream:
                last = out
                step = engine.last_step
                if step is not None and out.delta_token_ids:
                    res.running_seen.append(step.num_running or 1)
                pending += out.delta_text
                cut = len(pending) if out.finished else release_point(res.text, pending)
                if cut == 0:
                    continue
                chunk, pending = pending[:cut], pending[cut:]
                res.raw_text += chunk
                fact = Fact(
                    "completion",
                    {
                        "text": String(res.text + chunk),
                        "delta": String(chunk),
                        "tokens": len(out.token_ids),
                        "finished": out.finished,
                    },
                )
                r0 = time.perf_counter()
                verdict, _ = self._rail([fact], events, t0, f"token {len(out.token_ids)}")
                res.rails_s += time.perf_counter() - r0
                res.rail_evaluations += 1
                shown = chunk if verdict is None else verdict["text"]
                if verdict is not None:
                    res.reasons.append(verdict["reason"])
                    res.redactions += verdict["action"] == "rewrite"
                res.text += shown
                if on_text and shown:
                    on_text(shown)
                if verdict is not None and verdict["action"] == "stop":
                    res.outcome = "stopped"
                    break
        finally:
            await stream.aclose()  # aborts the request if it did not finish: its KV blocks are freed
        if last is not None:
            res.finish_reason = "rail_stop" if res.outcome == "stopped" else last.finish_reason
            res.prompt_tokens = last.num_prompt_tokens
            res.completion_tokens = len(last.token_ids)
            if last.first_token_time is not None:
                res.ttft_s = last.first_token_time - last.arrival_time
                if res.completion_tokens > 1:
                    res.tpot_s = (time.perf_counter() - last.first_token_time) / (res.completion_tokens - 1)
        events.append(
            TraceEvent(
                "model_call",
                "generate",
                {
                    "model": MODEL_NAME,
                    "version": model_version,
                    "ok": True,
                    "prompt_tokens": res.prompt_tokens,
                    "completion_tokens": res.completion_tokens,
                    "ttft_s": res.ttft_s,
                    "tpot_s": res.tpot_s,
                    "finish_reason": res.finish_reason,
                    "batch_size": max(res.running_seen) if res.running_seen else 1,
                },
                time.perf_counter() - t0,
            )
        )

    async def _record(self, res: RailedGeneration, events: list[Any], t0: float) -> str:
        from workbench.store import RunRow

        cfg = self.config
        inputs = {
            "prompt": res.prompt,
            "seed": cfg.seed,
            "sampling": {
                "temperature": cfg.temperature,
                "top_p": cfg.top_p,
                "max_tokens": cfg.max_tokens,
                "ignore_eos": cfg.ignore_eos,
            },
        }
        outputs = {"outcome": res.outcome, "text": res.text, "finish_reason": res.finish_reason, "reasons": res.reasons}
        explanation = {
            "rails": [
                {"rule": e.payload["rule"], "step": e.payload["step"]} for e in events if e.kind == "rule_firing"
            ],
            "raw_text": res.raw_text,
            "reasons": res.reasons,
        }
        model_versions = {MODEL_NAME: self.model_version} if res.outcome != "blocked" else {}
        row = RunRow(
            pipeline_name=PIPELINE_NAME,
            pipeline_version=self.version,
            knowledge_base_versions={cfg.rails: self.kb_version},
            model_versions=model_versions,
            inputs=inputs,
            input_hash=hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest(),
            outputs=outputs,
            explanation=explanation,
            status="succeeded",
            timings={"rails": round(res.rails_s, 6), "total": round(time.perf_counter() - t0, 6)},
            duration=time.perf_counter() - t0,
        )
        return await self.wb.recorder.record(row, events)


async def generate_many(
    gen: RailedGenerator,
    prompts: list[str],
    *,
    on_result: Callable[[int, RailedGeneration], None] | None = None,
    record: bool = True,
) -> list[RailedGeneration]:
    """Run all prompts concurrently (the engine batches them continuously); results in prompt order."""

    async def one(i: int, p: str) -> RailedGeneration:
        r = await gen.generate(p, index=i, record=record)
        if on_result:
            on_result(i, r)
        return r

    return list(await asyncio.gather(*(one(i, p) for i, p in enumerate(prompts))))
