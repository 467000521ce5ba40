"""`generate` nodes: a causal LM of the catalogue decodes on the generation engine (continuous
batching over a paged KV cache), with rules as rails inside the decode.

The prompt is a template over upstream values and facts (or chat `messages` rendered with the
model's chat template). With `rails`, generated text is held back and released to the client
only at check points (every N tokens, or at each sentence end, and at the finish): the rails
knowledge base runs on `(completion (text <all shown so far + chunk>) (delta <chunk>) (tokens N)
(finished TRUE|FALSE))` and its last `rail` fact decides: `allow` (or none), `redact`/`rewrite`
(show its `text` instead of the chunk), `replace` (its `text` replaces everything shown so far)
or `stop` (show its `text` instead of the chunk and end: the request is aborted, which frees the
sequence's KV-cache blocks before the next engine step). The node's value is `{text,
finish_reason, usage}`; `facts` map it to facts like a model node's outputs. After a stop the usage
counts the tokens up to the stopping check point, not those the engine produced before the abort reached
it (`RailedDecode`); an engine output merging several steps (a Ray replica's stream) is judged step by step.

Replay: a run records each check point's raw chunk and token count, so `runs replay` re-checks
the recorded text with an edited rails knowledge base without calling the model; with
`regenerate` it decodes again with the recorded seed.
"""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from ..context import FactScope, NodeState, OpenScope, RunContext
from ..errors import ModelUnloadedError, NodeExecutionError
from ..expressions import ExpressionError, compile_expression
from ..spec import FACT_FUNCTIONS
from ..spec_generate import SAMPLING_FIELDS, PromptTemplate, RailsSpec
from .mapping import map_facts
from .rails import RailActionError, RailedDecode, Step, completion_fact, rail_verdict


async def run_generate(ctx: RunContext, state: NodeState, rt: Any) -> None:
    """The whole node: `start_generate`, `GenerateCall.wait` (the decode), `complete_generate`."""
    from neural.errors import QueueFullError

    call = start_generate(ctx, state, rt, time.perf_counter())
    try:
        outcome = await call.wait()
    except (NodeExecutionError, QueueFullError):  # back-pressure passes through unchanged, as for model nodes
        raise
    except Exception as exc:
        outcome = exc
    complete_generate(ctx, state, call, outcome)


@dataclass(slots=True)
class _Request:
    """The engine request of a call (what an executor cancels when the run is abandoned)."""

    engine: Any
    request_id: str

    def cancel(self) -> None:
        if self.engine is not None:
            self.engine.abort_nowait(self.request_id)  # its KV-cache blocks are freed before the next step


@dataclass(slots=True)
class GenerateCall:
    """A generate node's decode: prepared by `start_generate` (CPU work: prompt, sampling, rails),
    run on the event loop by `wait`, finished by `complete_generate` (facts and record), so an
    executor can keep the two CPU parts off the loop, as it does for model nodes."""

    node_id: str
    name: str
    version: str
    prompt: str | None
    params: dict[str, Any]
    rails: RailsSpec | None
    decode: RailedDecode
    source: Any
    request: _Request
    funcs: dict[str, Any]
    replayed: bool
    recorded: dict[str, Any] | None
    timeout_s: float | None
    t0: float
    ctx: RunContext

    async def wait(self) -> RailedDecode:
        """Decode with the rails inside; returns the finished decode. Raises NodeExecutionError (the
        engine refused the prompt, a rail failed, the timeout passed)."""
        decode, ctx, engine = self.decode, self.ctx, self.request.engine
        try:
            async with asyncio.timeout(self.timeout_s):
                async for chunk in decode.run(self.source):
                    listener = getattr(ctx, "listener", None)
                    if listener is not None and (chunk or decode.replaced):
                        listener("text", self.node_id, {"text": decode.shown} if decode.replaced else {"delta": chunk})
                    if decode.stopped:
                        if engine is not None:
                            await engine.abort(self.request.request_id)  # frees the sequence's KV blocks now
                        break
        except TimeoutError:
            raise NodeExecutionError(
                self.node_id,
                "generate",
                f"model {self.name!r}: request timed out at its deadline, {self.timeout_s:g} s after submission "
                f"({decode.tokens} tokens generated)",
            ) from None
        finally:
            await self.source.aclose()  # aborts an unfinished request: its KV blocks are freed
        return decode


def start_generate(ctx: RunContext, state: NodeState, rt: Any, t0: float) -> GenerateCall:
    """Render the prompt, evaluate the sampling fields, load the rails; nothing is submitted until
    `wait`. Raises NodeExecutionError (a field's expression failed, the model is not a causal LM)."""
    node = state.node
    recorded = (getattr(ctx, "recorded", None) or {}).get(node.id)
    replayed = recorded is not None and not getattr(ctx, "regenerate", False)
    fs = FactScope(ctx.incoming_facts(node.id))
    scope = OpenScope({**fs.names(), **ctx.values_scope(node.id)})
    funcs = fs.functions()
    rails = RailsSpec.from_config(node.get("rails"))
    checker = _Rails(ctx, node.id, rt, rails) if rails else None
    rid = f"{ctx.pipeline.name}-{node.id}-{uuid.uuid4().hex[:12]}"
    engine = None
    if replayed:  # re-check the recorded text: the model is not loaded nor called
        name, version, prompt = recorded["model"], recorded["version"], recorded.get("prompt")
        params: dict[str, Any] = {"seed": recorded.get("seed")}
        source = _recorded_steps(recorded)
    else:
        try:
            entry = rt.catalog.get(node.get("model"))
        except ModelUnloadedError as exc:  # refused, as a model node does
            raise exc.in_node(ctx.pipeline.name, node.id) from None
        engine = getattr(entry, "backend", None)
        if getattr(entry, "task", None) != "causal-lm" or not hasattr(engine, "generate"):
            raise NodeExecutionError(
                node.id, node.type, f"model {entry.name!r} is not a causal language model (task {entry.task!r})"
            )
        name, version = entry.name, entry.version
        prompt = _prompt(node, entry, scope, funcs)
        params = _sampling(node, scope, funcs)
        if recorded is not None and recorded.get("seed") is not None:
            params["seed"] = recorded["seed"]  # regenerate: the recorded seed
        source = _engine_steps(engine, prompt, params, rid, node)
    ctx.model_versions[name] = version
    decode = RailedDecode(checker.check if checker else None, rails.every if rails else None, checker and checker.noted)
    return GenerateCall(
        node_id=node.id,
        name=name,
        version=version,
        prompt=prompt,
        params=params,
        rails=rails,
        decode=decode,
        source=source,
        request=_Request(engine, rid),
        funcs=funcs,
        replayed=replayed,
        recorded=recorded,
        timeout_s=node.get("timeout_s"),
        t0=t0,
        ctx=ctx,
    )


def complete_generate(ctx: RunContext, state: NodeState, call: GenerateCall, outcome: Any) -> None:
    """The node's value, facts and record from the finished decode (`outcome`: what `wait` returned,
    or its exception). Raises NodeExecutionError (the decode failed, a fact mapping failed)."""
    node = state.node
    if isinstance(outcome, BaseException):
        if isinstance(outcome, NodeExecutionError):
            raise outcome
        raise NodeExecutionError(node.id, node.type, f"model {call.name!r}: {type(outcome).__name__}: {outcome}")
    decode, replayed, params, rails = call.decode, call.replayed, call.params, call.rails
    tpot = (
        (decode.last_token_s - decode.ttft_s) / (decode.tokens - 1)
        if decode.tokens > 1 and decode.ttft_s is not None and decode.last_token_s is not None and not replayed
        else None
    )
    usage = {
        "prompt_tokens": decode.prompt_tokens,
        "completion_tokens": decode.tokens,
        "total_tokens": decode.prompt_tokens + decode.tokens,
    }
    value = {"text": decode.shown, "finish_reason": decode.finish_reason, "usage": usage}
    record = {
        "model": call.name,
        "version": call.version,
        "ok": True,
        "batch_size": max(decode.running) if decode.running else None,
        "latency_s": time.perf_counter() - call.t0,
        "prompt_tokens": usage["prompt_tokens"],
        "completion_tokens": usage["completion_tokens"],
        "finish_reason": decode.finish_reason,
        "ttft_s": None if replayed else decode.ttft_s,
        "tpot_s": tpot,
        "replayed": replayed,
    }
    ctx.event("model_call", node.id, record)
    mscope = {**ctx.values_scope(node.id), **value, "raw_text": decode.raw, "rails": decode.verdicts}
    state.facts = map_facts(node.id, node.type, node.get("facts") or [], mscope, call.funcs)
    state.value = value
    state.record = {
        "call": record,
        "facts_out": [str(f) for f in state.facts],
        "generation": {
            "model": call.name,
            "version": call.version,
            "prompt": call.prompt if isinstance(call.prompt, str) else None,
            "seed": params["seed"],
            "sampling": (call.recorded or {}).get("sampling")
            if replayed
            else {k: v for k, v in params.items() if k != "seed"},
            "rails": None if rails is None else {"knowledge_base": rails.knowledge_base, "every": rails.every},
            "raw_text": decode.raw,
            "text": decode.shown,
            "finish_reason": decode.finish_reason,
            "model_finish_reason": decode.model_finish_reason,
            "usage": usage,
            "checks": decode.checks,
            "verdicts": decode.verdicts,
            "replayed": replayed,
            "ttft_s": record["ttft_s"],
            "tpot_s": tpot,
            "running": decode.running,
        },
    }


# ---- inputs of the decode ---------------------------------------------------------------------------


def _prompt(node: Any, entry: Any, scope: Any, funcs: Any) -> str:
    try:
        if node.get("prompt") is not None:
            return PromptTemplate(node.get("prompt"), FACT_FUNCTIONS).render(scope, funcs)
        messages = [
            {"role": m["role"], "content": PromptTemplate(m["content"], FACT_FUNCTIONS).render(scope, funcs)}
            for m in node.get("messages")
        ]
    except ExpressionError as exc:
        fld = "prompt" if node.get("prompt") is not None else "messages"
        raise NodeExecutionError(node.id, node.type, f"field {fld}: {exc}") from exc
    from neural.generation.chat import ChatTemplateError, apply_chat_template

    try:
        return apply_chat_template(entry.source, messages)
    except ChatTemplateError as exc:
        raise NodeExecutionError(node.id, node.type, f"field messages: {exc}") from None


def _sampling(node: Any, scope: Any, funcs: Any) -> dict[str, Any]:
    """SamplingParams fields from the node (literals or expressions); a missing seed is drawn and recorded."""
    out: dict[str, Any] = {}
    for key, (typ, _) in SAMPLING_FIELDS.items():
        v = node.get(key)
        if isinstance(v, str):
            try:
                v = compile_expression(v, FACT_FUNCTIONS).evaluate(scope, funcs)
            except ExpressionError as exc:
                raise NodeExecutionError(node.id, node.type, f"field {key}: {exc}") from exc
        if v is not None:
            try:
                out[key] = typ(v)
            except (TypeError, ValueError):
                raise NodeExecutionError(
                    node.id, node.type, f"field {key}: expected {typ.__name__}, got {v!r}"
                ) from None
    stop = node.get("stop")
    out["stop"] = [stop] if isinstance(stop, str) else list(stop or [])
    out["ignore_eos"] = bool(node.get("ignore_eos", False))
    out.setdefault("max_tokens", 256)
    if out.get("seed") is None:
        out["seed"] = random.getrandbits(63)  # recorded, so `runs replay --regenerate` reproduces the run
    return out


async def _engine_steps(engine: Any, prompt: str, params: dict[str, Any], rid: str, node: Any) -> AsyncIterator[Step]:
    from neural.generation import SamplingParams

    try:
        sp = SamplingParams(**params)
    except (TypeError, ValueError) as exc:
        raise NodeExecutionError(node.id, node.type, str(exc).replace("SamplingParams.", "field ")) from None
    stream = engine.generate(prompt, sp, rid)
    try:
        async for out in stream:
            step = getattr(engine, "last_step", None)
            running = step.num_running or 1 if step is not None and out.delta_token_ids else None
            parts = out.step_deltas()  # an output merging several engine steps is judged step by step
            for i, (tokens, text) in enumerate(parts, 1):
                last = i == len(parts)
                yield Step(
                    text,
                    tokens,
                    out.finished and last,
                    out.finish_reason if last else None,
                    out.num_prompt_tokens,
                    running if last else None,
                )
    except ValueError as exc:  # the engine refused the prompt (empty, longer than the context)
        raise NodeExecutionError(node.id, node.type, f"model: {exc}") from None
    finally:
        await stream.aclose()  # aborts the request (frees its KV blocks) if it did not finish


async def _recorded_steps(recorded: dict[str, Any]) -> AsyncIterator[Step]:
    """The recorded check points again, as one step each (replay without the model)."""
    checks = recorded.get("checks") or []
    prompt_tokens = (recorded.get("usage") or {}).get("prompt_tokens", 0)
    for i, c in enumerate(checks):
        last = i == len(checks) - 1
        yield Step(c["raw"], c["tokens"], last, recorded.get("model_finish_reason") if last else None, prompt_tokens)


# ---- the rails inside the decode (check points and verdicts: `.rails.RailedDecode`) -------------


class _Rails:
    """Runs the rails knowledge base on one `completion` fact on the run pool (never on the event
    loop, which keeps streaming the tokens of other requests meanwhile), its firings traced."""

    def __init__(self, ctx: RunContext, node_id: str, rt: Any, spec: RailsSpec) -> None:
        self.ctx, self.node_id, self.spec = ctx, node_id, spec
        kb = rt.library.load([spec.knowledge_base], ctx.base_dir)
        ctx.kb_versions[kb.name] = kb.version
        self.kb = kb
        self.library = rt.library
        self.pool = rt.worker_pool()

    async def check(self, text: str, delta: str, tokens: int, finished: bool) -> dict[str, str] | None:
        """The last `rail` verdict for this check point (None: allow), evaluated on a pool thread.
        Raises NodeExecutionError."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.pool, self._check, text, delta, tokens, finished)

    def _check(self, text: str, delta: str, tokens: int, finished: bool) -> dict[str, str] | None:
        try:
            with self.library.lease(self.kb) as engine:  # the cached CLIPS engine of this KB version
                result = engine.evaluate([completion_fact(text, delta, tokens, finished)])
        except Exception as exc:
            raise NodeExecutionError(self.node_id, "generate", f"rails {self.kb.name!r}: {exc}") from exc
        firings = [
            {"knowledge_base": self.kb.name, "rule": fr.rule, "facts": list(fr.facts), "asserted": [], "retracted": []}
            for fr in result.firings
        ]
        for ev in result.events:  # which facts each firing asserted and retracted (the engine's trace)
            if ev.firing is not None and ev.firing < len(firings):
                firings[ev.firing]["asserted" if ev.kind == "assert" else "retracted"].append(ev.fact)
        for i, fr in enumerate(firings):
            self.ctx.event("rule_firing", self.node_id, {"index": i, **fr, "tokens": tokens})
        try:
            return rail_verdict(result.facts_of("rail"), self.kb.name)
        except RailActionError as exc:
            raise NodeExecutionError(self.node_id, "generate", str(exc)) from None

    def noted(self, verdict: dict[str, Any]) -> None:
        """Record a verdict in the run's trace and pass it to a streaming listener."""
        self.ctx.event("rail_verdict", self.node_id, verdict)
        listener = getattr(self.ctx, "listener", None)
        if listener is not None:
            listener("rail", self.node_id, verdict)
