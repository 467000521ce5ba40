"""The generation engine as its own Ray Serve deployment, and the client the ingress and the pipeline
replicas use in place of a local engine.

    generation (one replica per GPU; one on a CPU cluster)   `GenerationReplica`: an `AsyncLLMEngine`
                                                              (paged KV cache, continuous batching) per
                                                              served causal LM
    RemoteEngine (in the ingress and each pipeline replica)  `AsyncLLMEngine`'s interface (`generate`,
                                                              `abort`, `abort_nowait`, `engine.*`) over a
                                                              DeploymentHandle: outputs stream back
                                                              through `options(stream=True)`

Because `RemoteEngine` has the engine's interface, `Serving` (the OpenAI and `/v2 .../generate`
routes) and the pipelines' `generate` nodes use it unchanged: the ingress's `Serving` gets one per
served LM in its engines, and each catalogue gets a `causal-lm` entry whose backend is one. A request
streams from one replica; leaving the stream early cancels the Serve request, whose generator in the
replica closes its engine stream, which aborts the request and frees its KV-cache blocks.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from workbench.config import Settings

log = logging.getLogger("workbench.scale")


@dataclass
class RemoteFailure:
    """An exception the replica's engine raised, sent as a stream item (re-raised by `RemoteEngine`)."""

    exc: BaseException


class GenerationReplica:
    """One replica of the `generation` deployment: a generation engine per served causal LM.

    Args:
        settings_doc: `Settings.model_dump(mode="json")` of the deploying process.
        lms: catalogue models of task `causal-lm` to serve (their `engine:` settings apply).
        folders: more causal LMs to serve, `{name: Hugging Face folder}` (readable on every node).
    Raises (at start-up, so the deployment fails to deploy with the reason): neural.errors.ModelLoadError.
    """

    async def __init__(
        self, settings_doc: dict[str, Any], lms: list[str] | None = None, folders: dict[str, str] | None = None
    ) -> None:
        self.settings = Settings(**settings_doc)
        self.entries: dict[str, Any] = {}
        self.cancelled: dict[str, int] = {}  # requests whose caller left before the end, by model
        await asyncio.to_thread(self._load, list(lms or []), dict(folders or {}))

    def _load(self, lms: list[str], folders: dict[str, str]) -> None:
        from neural.generation.register import load_causal_lm
        from workbench.facade.pipelines import default_model_catalog
        from workbench.pipeline.catalog import ModelCatalog

        device = None if self.settings.device == "auto" else self.settings.device
        catalog = ModelCatalog(default_model_catalog(), device=device)
        for name in lms:
            self.entries[name] = catalog.get(name)
        for name, folder in folders.items():
            self.entries[name] = load_causal_lm(Path(folder), name)

    def describe(self) -> dict[str, dict[str, Any]]:
        """`{name: {"version", "source", "device", "dtype", "metadata", "max_model_len", "num_kv_blocks",
        "block_size"}}` of the served LMs (what the ingress answers `/v1/models` and `/v2` metadata with)."""
        out = {}
        for name, entry in self.entries.items():
            llm = entry.backend.engine
            out[name] = {
                "version": entry.version,
                "source": entry.source,
                "device": str(llm.device),
                "dtype": entry.dtype,
                "metadata": dict(entry.metadata),
                "max_model_len": llm.max_model_len,
                "num_kv_blocks": llm.num_kv_blocks,
                "block_size": llm.config.block_size,
            }
        return out

    async def generate(
        self, model: str, prompt: str | list[int], params: Any, request_id: str, interval_s: float = 0.0
    ) -> Any:
        """Stream `AsyncLLMEngine.generate(prompt, params, request_id)`'s `RequestOutput`s; an exception
        of the engine (ValueError: bad prompt; QueueFullError; RuntimeError) comes as the last item, a
        `RemoteFailure`. Cancelled by the caller: the engine stream is closed, which aborts the request.

        `interval_s` > 0: after the first output, outputs go out at most every `interval_s` seconds, the
        engine steps in between merged into one item (`merge_outputs`), so a request costs a Ray stream
        item per interval rather than per token (measured in docs/scaling.md); 0: one item per step."""
        entry = self.entries.get(model)
        if entry is None:
            yield RemoteFailure(ValueError(f"model {model!r} is not served by this replica ({sorted(self.entries)})"))
            return
        stream = entry.backend.generate(prompt, params, request_id)
        queue: asyncio.Queue[Any] = asyncio.Queue()

        async def pump() -> None:  # the engine's outputs as they come, then None (or the failure)
            try:
                async for out in stream:
                    queue.put_nowait(out)
                queue.put_nowait(None)
            except Exception as exc:
                queue.put_nowait(RemoteFailure(exc))

        task = asyncio.create_task(pump())
        interval = interval_s
        finished = False
        try:
            while not finished:
                items = [await queue.get()]
                while not queue.empty():
                    items.append(queue.get_nowait())
                outs = [x for x in items if x is not None and not isinstance(x, RemoteFailure)]
                if outs:
                    merged = merge_outputs(outs)
                    finished = bool(merged.finished)
                    yield merged
                if items[-1] is None or isinstance(items[-1], RemoteFailure):
                    finished = True
                    if items[-1] is not None:
                        yield items[-1]
                elif not finished and interval:
                    await asyncio.sleep(interval)  # the steps of the interval go out as one item
        finally:
            if not finished:  # cancelled by the caller (client gone, rail stop, abort)
                self.cancelled[model] = self.cancelled.get(model, 0) + 1
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            await stream.aclose()  # aborts an unfinished request: its KV-cache blocks are freed

    def chat_prompt(self, model: str, messages: list[dict[str, Any]]) -> dict[str, str]:
        """`{"prompt": text}` rendered with the model's chat template, or `{"error": message}`."""
        from neural.generation.chat import ChatTemplateError, apply_chat_template

        entry = self.entries[model]
        try:
            return {"prompt": apply_chat_template(Path(entry.source), messages)}
        except ChatTemplateError as exc:
            return {"error": str(exc)}

    def stats(self, model: str) -> dict[str, int]:
        """`{"used", "free", "unfinished", "cancelled"}`: KV-cache blocks, unfinished requests and requests
        cancelled by their caller so far, of this replica."""
        engine = self.entries[model].backend
        return {
            "used": engine.num_used_blocks,
            "free": engine.num_free_blocks,
            "unfinished": engine.num_unfinished_requests,
            "cancelled": self.cancelled.get(model, 0),
        }

    def check_health(self) -> None:
        """Unhealthy when an engine's thread died (Ray Serve then replaces the replica)."""
        for name, entry in self.entries.items():
            thread = getattr(entry.backend, "_thread", None)
            if thread is not None and not thread.is_alive():
                raise RuntimeError(f"generation engine of {name!r} stopped")


def merge_outputs(outs: list[Any]) -> Any:
    """`neural.generation.outputs.merge_outputs` (imported when first used: torch is loaded with it)."""
    from neural.generation.outputs import merge_outputs as merge

    return merge(outs)


def _replica_gone(exc: BaseException) -> bool:
    from ray import exceptions as rex

    gone = (rex.RayActorError, rex.ActorUnavailableError, rex.ActorDiedError)
    return isinstance(exc, gone) or isinstance(getattr(exc, "cause", None), gone)


class RemoteEngine:
    """`neural.generation.AsyncLLMEngine`'s interface over the `generation` deployment.

    Args:
        handle: DeploymentHandle of `GenerationReplica`.
        name: the served model's name.
        info: its `GenerationReplica.describe()` item.
        retries: a request whose replica was lost before its first output is sent again this often;
            one lost after it had streamed raises RuntimeError (the serving layer answers 503).
        stream_interval_s: the replica merges a request's engine steps over this many seconds into one
            stream item (0: one item per step, as a local engine streams). Request ids in `per_step`
            stream every step whatever this says (rails judge each step's text, as in one process).
    """

    def __init__(
        self, handle: Any, name: str, info: dict[str, Any], retries: int = 2, stream_interval_s: float = 0.0
    ) -> None:
        self._handle = handle
        self.name = name
        self.info = info
        self.retries = retries
        self.stream_interval_s = stream_interval_s
        self.per_step: set[str] = set()
        self.engine = SimpleNamespace(
            max_model_len=info["max_model_len"],
            num_kv_blocks=info["num_kv_blocks"],
            config=SimpleNamespace(block_size=info["block_size"]),
            device=info["device"],
            model_dir=Path(info["source"] or "."),
        )
        self.chat_template_dir = None
        self.max_pending_requests: int | None = None
        self._inflight: dict[str, Any] = {}

    async def generate(self, prompt: str | list[int], params: Any = None, request_id: str | None = None) -> Any:
        """Stream the request's `RequestOutput`s from a replica (as `AsyncLLMEngine.generate`, same errors).
        Leaving early cancels the request on the replica (its KV-cache blocks are freed there)."""
        import uuid

        rid = request_id or uuid.uuid4().hex
        for attempt in range(self.retries + 1):
            interval = 0.0 if rid in self.per_step else self.stream_interval_s
            stream = self._handle.options(stream=True).generate.remote(self.name, prompt, params, rid, interval)
            self._inflight[rid] = stream
            started = finished = False
            try:
                async for out in stream:
                    if isinstance(out, RemoteFailure):
                        raise out.exc
                    started = True
                    finished = bool(out.finished)
                    yield out
                return
            except Exception as exc:
                if not _replica_gone(exc):
                    raise
                if started or attempt == self.retries:
                    raise RuntimeError(
                        f"model {self.name!r}: the generation replica serving request {rid} was lost "
                        f"({type(exc).__name__}); retry later"
                    ) from None
                log.warning("generation %s: replica lost before its first output; attempt %d", rid, attempt + 2)
                await asyncio.sleep(min(0.05 * 2**attempt, 1.0))
            finally:
                self._inflight.pop(rid, None)
                if not finished:
                    stream.cancel()  # the replica's generator closes its engine stream: the request is aborted

    def abort_nowait(self, request_id: str) -> None:
        """Cancel the request's Serve call (the replica aborts it before its engine's next step)."""
        stream = self._inflight.pop(request_id, None)
        if stream is not None:
            stream.cancel()

    async def abort(self, request_id: str) -> None:
        """Cancel the request (unknown ids: no-op). Returns once the cancellation is sent: the replica frees
        the request's KV-cache blocks when its generator closes, before the engine's next step."""
        self.abort_nowait(request_id)

    def render_chat(self, messages: list[dict[str, Any]]) -> dict[str, str]:
        """The replica's `chat_prompt` (the template lives in the model folder on the replica's node).
        Blocks (at most 60 s): call from a thread."""
        return self._handle.chat_prompt.remote(self.name, messages).result(timeout_s=60)

    def _stats(self) -> dict[str, int]:
        return self._handle.stats.remote(self.name).result(timeout_s=10)

    @property
    def num_used_blocks(self) -> int:
        """KV-cache blocks in use on the replica that answers (blocks: call from a thread)."""
        return self._stats()["used"]

    @property
    def num_free_blocks(self) -> int:
        return self._stats()["free"]

    @property
    def num_unfinished_requests(self) -> int:
        return self._stats()["unfinished"]

    def close(self) -> None:
        """Nothing to release here: the engine lives in the replica (a catalogue closing its entry calls this)."""

    def entry(self) -> Any:
        """A `neural.entry.ModelEntry` (task `causal-lm`) with this engine as its backend, for a catalogue."""
        from neural.entry import ModelEntry

        info = self.info
        return ModelEntry(
            name=self.name,
            version=info["version"],
            format="hf",
            task="causal-lm",
            signature=None,
            device=info["device"],
            dtype=info["dtype"],
            backend=self,
            source=info["source"],
            metadata=dict(info["metadata"]),
        )


def remote_engines(handle: Any, retries: int, stream_interval_s: float = 0.0) -> dict[str, RemoteEngine]:
    """`{name: RemoteEngine}` of every LM the `generation` deployment serves (blocks until it answers;
    call from a thread, not an event loop)."""
    info = handle.describe.remote().result(timeout_s=600)
    return {name: RemoteEngine(handle, name, doc, retries, stream_interval_s) for name, doc in info.items()}


def generation_options(settings: Settings, num_gpus: float) -> dict[str, Any]:
    """Serve options of the `generation` deployment: one replica per GPU of the cluster, each holding one
    (`settings.ray.generation_replicas` overrides the count); on a cluster without GPUs one replica."""
    rs = settings.ray
    gpus = int(num_gpus)
    replicas = rs.generation_replicas or max(1, gpus)
    actor: dict[str, Any] = {"num_cpus": 0}
    if gpus > 0:
        actor["num_gpus"] = 1
    return {
        "name": "generation",
        "num_replicas": replicas,
        "max_ongoing_requests": rs.generation_max_ongoing_requests,
        "ray_actor_options": actor,
        "health_check_period_s": 5.0,
    }
