"""Generation (OpenAI-compatible) through the generation engine, with knowledge-base rails.

Streaming is an async iterator of `GenerationDelta`; leaving it early aborts the request in the
engine, which frees its KV-cache blocks before the next step.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from .errors import (
    BadInputError,
    ExecutionError,
    NotFoundError,
    OverloadedError,
    UnavailableError,
    call,
)

log = logging.getLogger("workbench.serving")


@dataclass(slots=True)
class GenerationDelta:
    """One streamed step of a generation: new text, totals so far, and the finish reason at the end.

    `steps`: None for one engine step; for an output merging several (a Ray generation replica's
    stream interval) each step's `(completion tokens so far, delta text)`, as `RequestOutput.step_deltas`."""

    delta_text: str
    text: str
    delta_tokens: int
    finished: bool
    finish_reason: str | None
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int
    steps: list[tuple[int, str]] | None = None


class GenerationServing:
    """Mixin of `Serving`: served causal LMs. Uses the host's `_engines`, `_owned_engines`,
    `_max_pending_generations`, `workbench` and `require_ready()`."""

    def _start_demo_lm(self) -> None:
        from neural.generation import DEMO_LM_DIR

        if not (DEMO_LM_DIR / "config.json").is_file():
            log.info("no demo LM at %s; /v1/completions serves no model", DEMO_LM_DIR)
            return
        catalog = getattr(self.workbench, "catalog", None)
        spec = catalog.specs().get("demo-lm") if catalog is not None else None
        if spec is not None and spec.task == "causal-lm":  # one engine for /v1 and generate nodes
            engine = catalog.get("demo-lm").backend
            engine.max_pending_requests = self._max_pending_generations
            self._engines["demo-lm"] = engine
            return
        self.add_engine("demo-lm", DEMO_LM_DIR)

    def add_engine(self, name: str, model_dir: Any, config: Any = None) -> Any:
        """Start a generation engine for the causal LM in `model_dir` and serve it as `name`.

        `config`: a `neural.generation.EngineConfig` (default: its defaults). Returns the engine.
        Its metrics go to the runtime registry served at /metrics.
        """
        from neural.generation import AsyncLLMEngine
        from neural.metrics import METRICS_REGISTRY

        engine = AsyncLLMEngine.from_pretrained(
            model_dir,
            config,
            model_name=name,
            registry=METRICS_REGISTRY,
            max_pending_requests=self._max_pending_generations,
        )
        engine.chat_template_dir = model_dir
        self._engines[name] = engine
        self._owned_engines.add(name)
        return engine

    def serve_folder(self, path: Any, name: str | None = None, config: Any = None) -> Any:
        """Serve a Hugging Face model folder as `name` (default: the folder's name); returns its entry.

        A causal LM the generation engine supports (Llama, Mistral, Qwen2, GPT-2 families) is
        served on `/v1/completions`, `/v1/chat/completions` and `/v2/models/NAME/generate`, and
        is in the workbench's catalogue for generate nodes (one engine for both). Any other folder
        the loaders support (text embedding or classification) is served by the dynamic batcher
        on `/v2/models/NAME/infer` and to model nodes. Raises neural.errors.ModelLoadError naming
        what is missing or unsupported.
        """
        from pathlib import Path

        from neural.generation.model_config import is_causal_lm
        from neural.metrics import METRICS_REGISTRY

        root = Path(path)
        name = name or root.name
        if is_causal_lm(root):
            from neural.generation.register import load_causal_lm

            entry = load_causal_lm(
                root, name, config, max_pending_requests=self._max_pending_generations, registry=METRICS_REGISTRY
            )
            self._engines[name] = entry.backend
        else:
            from neural.loaders import load_hf_dir

            entry = load_hf_dir(root, name=name)
        catalog = getattr(self.workbench, "catalog", None)
        if catalog is not None:
            catalog.register(entry)  # the catalogue closes it (and its engine) when the workbench closes
        elif entry.task == "causal-lm":
            self._owned_engines.add(name)
        return entry

    # ---- generation (OpenAI-compatible) ---------------------------------------------------
    def generation_models(self) -> list[dict[str, Any]]:
        """`[{"name", "max_model_len", "num_kv_blocks"}]` of the served causal LMs."""
        out = []
        for name, engine in sorted(self._engines.items()):
            eng = engine.engine
            out.append(
                {
                    "name": name,
                    "max_model_len": eng.max_model_len,
                    "num_kv_blocks": eng.num_kv_blocks,
                    "block_size": eng.config.block_size,
                    "device": str(eng.device),
                }
            )
        return out

    def _engine(self, model: str) -> Any:
        self.require_ready()
        engine = self._engines.get(model)
        if engine is None:
            if any(e.name == model for e in self._model_entries()):  # served, but one-shot (n16: was a 404)
                raise BadInputError(
                    f"model {model!r} is not a generation model: it answers POST /v2/models/{model}/infer; "
                    f"the generation models are {', '.join(sorted(self._engines)) or '(none)'}",
                    param="model",
                )
            raise NotFoundError("model", model, list(self._engines))
        return engine

    def kv_blocks(self, model: str) -> dict[str, int]:
        """`{"used", "free", "total"}` KV-cache blocks of a served LM (used = referenced by requests)."""
        engine = self._engine(model)
        return {"used": engine.num_used_blocks, "free": engine.num_free_blocks, "total": engine.engine.num_kv_blocks}

    def unfinished_generations(self, model: str) -> int:
        """Requests admitted and not finished (waiting + running) on a served LM."""
        return self._engine(model).num_unfinished_requests

    def chat_prompt(self, model: str, messages: list[dict[str, Any]]) -> str:
        """Render chat `messages` (`[{"role", "content"}]`) with the model's chat template.

        Rendered by transformers' `apply_chat_template` (see `neural.generation.chat`); a model
        without a template gets the plain documented fallback: one `role: content` line per
        message, then `assistant:`. Raises NotFoundError, BadInputError (the template refused).
        """
        from neural.generation.chat import ChatTemplateError, apply_chat_template

        engine = self._engine(model)
        model_dir = getattr(engine, "chat_template_dir", None) or engine.engine.model_dir
        try:
            return apply_chat_template(model_dir, messages)
        except ChatTemplateError as exc:
            raise BadInputError(f"model {model!r}: {exc}", param="messages") from None

    async def generate(self, model: str, prompt: str | list[int], params: dict[str, Any], request_id: str) -> Any:
        """Stream one generation: an async iterator of `GenerationDelta`, the last with `finished=True`.

        Args:
            prompt: text (tokenised by the model's tokenizer) or token ids.
            params: `neural.generation.SamplingParams` fields (temperature, top_p, top_k, seed,
                max_tokens, stop, stop_token_ids, ignore_eos).
            request_id: the engine's request id; leaving the iterator early (or `abort`) cancels
                the request and frees its KV-cache blocks.
        Raises (on the first `__anext__`): NotFoundError, BadInputError (parameters, prompt too
        long, empty prompt), OverloadedError (too many unfinished requests), UnavailableError.
        """
        from neural.errors import QueueFullError
        from neural.generation import SamplingParams

        engine = self._engine(model)
        try:
            sp = SamplingParams(**params)
        except (TypeError, ValueError) as exc:
            raise BadInputError(str(exc).replace("SamplingParams.", ""), param=_param_of(str(exc))) from None
        stream = engine.generate(prompt, sp, request_id)
        try:
            async for out in stream:
                yield GenerationDelta(
                    out.delta_text,
                    out.text,
                    len(out.delta_token_ids),
                    out.finished,
                    out.finish_reason,
                    out.num_prompt_tokens,
                    len(out.token_ids),
                    out.num_cached_tokens,
                    out.step_deltas() if out.merged_steps else None,
                )
        except QueueFullError as exc:
            raise OverloadedError(
                f"model {model!r}: {exc.max_queue_size} generation requests are unfinished; retry later",
                exc.retry_after_s,
            ) from None
        except ValueError as exc:
            raise BadInputError(str(exc), param="prompt") from None
        except RuntimeError as exc:
            raise UnavailableError(str(exc), 5.0) from None
        finally:
            await stream.aclose()  # aborts the request (frees its KV blocks) if it did not finish

    async def generate_with_rails(
        self, model: str, prompt: str | list[int], params: dict[str, Any], request_id: str, rails: str
    ) -> Any:
        """`generate` wrapped by a knowledge base whose rules act as input and output rails.

        Contract of the rails knowledge base (templates it must define):
          `(deftemplate prompt (slot text))`, `(deftemplate completion (slot text) (slot delta)
          (slot tokens) (slot finished))`, `(deftemplate rail (slot action) (slot text) (slot reason))`.
        Input rail: working memory gets `(prompt (text "<prompt>"))` once; a final `rail` fact with
        action `block` ends the request before generation (its `text` is the answer, finish
        reason `content_filter`); `rewrite` replaces the prompt with its `text`.
        Output rail: the decode loop of a pipeline's `generate` node with `every: word`
        (`workbench.pipeline.nodes.rails.RailedDecode`): the text is released in whole words, and
        for each release `(completion (text "<all shown so far + delta>") (delta "<new words>")
        (tokens N) (finished TRUE|FALSE))`; `stop` ends the generation (the delta is replaced by
        the rail's `text`, finish reason `content_filter`, the KV blocks are freed at once);
        `rewrite`/`redact` replace the delta with its `text`; `replace` is refused (a stream cannot
        take back text already sent). After a stop `completion_tokens` counts the tokens up to the
        stopping check point, whenever the abort reached the engine; merged engine outputs are judged
        step by step. Token-id
        prompts skip the input rail. The rails' firings are not recorded as a pipeline run.
        Raises as `generate`, plus NotFoundError / InvalidDocumentError for the knowledge base and
        ExecutionError for a rail action the rail does not take.
        """
        from rules.facts import Fact, String
        from workbench.pipeline.nodes.rails import RAIL_ACTIONS, RailedDecode, Step, completion_fact

        wb = self._wb()
        try:
            kb = await call(wb.get_knowledge_base, rails)  # 404 / 422 before any generation
        except NotFoundError as exc:  # the request's field is `rails`
            exc.param = "rails"
            raise
        _check_rail_templates(rails, kb)
        if isinstance(prompt, str):
            verdict = await self._rail(rails, [Fact("prompt", {"text": String(prompt)})], ("block", "rewrite", "allow"))
            if verdict is not None and verdict["action"] == "block":
                text = verdict["text"]
                yield GenerationDelta(text, text, 0, True, "content_filter", 0, 0, 0)
                return
            if verdict is not None and verdict["action"] == "rewrite":
                prompt = verdict["text"]
        output_actions = tuple(a for a in RAIL_ACTIONS if a != "replace")
        stream = self.generate(model, prompt, params, request_id)
        # the engine's latest delta, whether the step read last is its last, the completion tokens yielded so far
        last: list[Any] = [None, True, 0]

        async def steps() -> Any:  # one Step per engine step, also when the transport merged several
            async for d in stream:
                parts = d.steps or [(d.completion_tokens, d.delta_text)]
                for i, (tokens, text) in enumerate(parts, 1):
                    end = i == len(parts)
                    last[0], last[1] = d, end
                    yield Step(text, tokens, d.finished and end, d.finish_reason if end else None, d.prompt_tokens)

        async def check(text: str, delta: str, tokens: int, finished: bool) -> dict[str, str] | None:
            return await self._rail(rails, [completion_fact(text, delta, tokens, finished)], output_actions)

        decode = RailedDecode(check, "word")
        source = steps()
        released = decode.run(source)
        try:
            async for chunk in released:
                d, end = last[0], last[1]
                if decode.stopped:
                    await self.abort(model, request_id)
                finished = decode.stopped or (d.finished and end)
                reason = "content_filter" if decode.stopped else (d.finish_reason if end else None)
                tokens = decode.tokens  # of the check point's step: nothing the engine did later counts
                yield GenerationDelta(
                    chunk,
                    decode.shown,
                    tokens - last[2],
                    finished,
                    reason,
                    d.prompt_tokens,
                    tokens,
                    d.cached_tokens,
                )
                last[2] = tokens
        finally:  # a client that leaves early: every generator closed, the request aborted
            await released.aclose()
            await source.aclose()
            await stream.aclose()

    async def _rail(self, kb: str, facts: list[Any], actions: tuple[str, ...]) -> dict[str, str] | None:
        """Run the rails knowledge base on `facts` (on a worker); the last `rail` fact as
        `{"action", "text", "reason"}`, None for allow. Raises ExecutionError for an action not in `actions`."""
        from workbench.pipeline.nodes.rails import RailActionError, rail_verdict

        result = await call(self.workbench.run_knowledge_base, kb, facts)
        try:
            return rail_verdict(result.facts_of("rail"), kb, actions)
        except RailActionError as exc:
            raise ExecutionError(str(exc)) from None

    async def abort(self, model: str, request_id: str) -> None:
        """Cancel a generation and return once its KV-cache blocks are free (unknown ids: no-op)."""
        await self._engine(model).abort(request_id)


def _check_rail_templates(name: str, kb: Any) -> None:
    """Raise BadInputError (param `rails`) naming what the knowledge base lacks to act as rails, input rail
    included (n16: a knowledge base without them answered "facts[0]: template 'prompt' is not defined", about
    facts the client never sent)."""
    from workbench.pipeline.nodes.rails import PROMPT_TEMPLATE, RAIL_TEMPLATES, missing_rail_templates

    need = {**PROMPT_TEMPLATE, **RAIL_TEMPLATES}
    missing = missing_rail_templates(kb, need)
    if missing:
        wanted = "; ".join(f"({t} {' '.join(f'(slot {s})' for s in slots)})" for t, slots in need.items())
        raise BadInputError(
            f"knowledge base {name!r} cannot act as rails: it does not define {', '.join(missing)} (rails need the "
            f"templates {wanted}; docs/api.md, Rails)",
            param="rails",
        )


def _param_of(message: str) -> str | None:
    import re

    m = re.search(r"SamplingParams\.(\w+)", message)
    return m.group(1) if m else None
