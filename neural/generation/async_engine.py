"""Asynchronous front of the engine: streaming generation as an async iterator, abort by id.

The engine runs in one background thread (the forward pass holds the GIL-free torch kernels
and would block an event loop). Callers on any event loop submit requests; the thread adds
them between steps, runs steps while work remains, and hands each request's deltas to its
caller's loop with `call_soon_threadsafe`. Leaving the iterator early (a client disconnect
cancelling the task, or `break`) aborts the request, which frees its KV-cache blocks before
the next step starts.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

from ..errors import QueueFullError
from .config import EngineConfig
from .engine import LLMEngine
from .metrics import EngineMetrics
from .outputs import RequestOutput, StepOutput
from .sampling_params import SamplingParams
from .sequence import Sequence


class _Stream:
    __slots__ = ("loop", "queue", "finished")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.queue: asyncio.Queue = asyncio.Queue()
        self.finished = False

    def put(self, item: RequestOutput | BaseException) -> None:
        try:
            self.loop.call_soon_threadsafe(self.queue.put_nowait, item)
        except RuntimeError:  # the caller's loop is closed: nobody is listening any more
            pass


class AsyncLLMEngine:
    """Thread-backed streaming wrapper around one `LLMEngine`.

    max_pending_requests: most unfinished requests admitted (waiting + running); one more
    raises `neural.errors.QueueFullError` and admits nothing. None: unbounded.
    """

    def __init__(self, engine: LLMEngine, max_pending_requests: int | None = None) -> None:
        self.engine = engine
        self.max_pending_requests = max_pending_requests
        self._cv = threading.Condition()
        self._adds: list[Sequence] = []
        self._aborts: list[tuple[str, threading.Event | None]] = []
        self._streams: dict[str, _Stream] = {}
        self._stopped = False
        self._error: BaseException | None = None
        self.last_step: StepOutput | None = None
        self._thread = threading.Thread(target=self._loop, name="generation-engine", daemon=True)
        self._thread.start()

    @classmethod
    def from_pretrained(
        cls,
        model_dir: str | Path,
        config: EngineConfig | None = None,
        model_name: str | None = None,
        registry=None,
        enable_metrics: bool = True,
        max_pending_requests: int | None = None,
    ) -> AsyncLLMEngine:
        """Load `model_dir` into a new engine; Prometheus metrics labelled `model_name` (default: the folder name)."""
        metrics = EngineMetrics(model_name or Path(model_dir).name, registry) if enable_metrics else None
        return cls(LLMEngine(model_dir, config, metrics=metrics), max_pending_requests)

    # ---- state (read from any thread) ------------------------------------------------------
    @property
    def num_free_blocks(self) -> int:
        return self.engine.num_free_blocks

    @property
    def num_used_blocks(self) -> int:
        return self.engine.num_used_blocks

    @property
    def num_unfinished_requests(self) -> int:
        return len(self._streams)

    # ---- requests --------------------------------------------------------------------------
    async def generate(
        self, prompt: str | list[int], params: SamplingParams | None = None, request_id: str | None = None
    ) -> AsyncIterator[RequestOutput]:
        """Stream one request's outputs: each item carries `delta_text`/`delta_token_ids` and
        the totals so far; the last has `finished=True`.

        Raises ValueError (bad prompt or parameters, duplicate request id), QueueFullError,
        RuntimeError if the engine stopped or its thread failed.
        """
        rid = request_id or uuid.uuid4().hex
        seq = self.engine.make_sequence(rid, prompt, params)  # validation errors raise here, in the caller
        stream = _Stream(asyncio.get_running_loop())
        with self._cv:
            if self._stopped or self._error is not None:
                raise RuntimeError(f"generation engine is stopped{f': {self._error!r}' if self._error else ''}")
            if rid in self._streams:
                raise ValueError(f"request id {rid!r} is already in the engine")
            if self.max_pending_requests is not None and len(self._streams) >= self.max_pending_requests:
                raise QueueFullError(str(self.engine.model_dir.name), self.max_pending_requests, 1.0)
            self._streams[rid] = stream
            self._adds.append(seq)
            self._cv.notify()
        try:
            while True:
                item = await stream.queue.get()
                if isinstance(item, BaseException):
                    raise item
                if item.finished:
                    stream.finished = True
                yield item
                if item.finished:
                    return
        finally:
            if not stream.finished:
                self.abort_nowait(rid)

    def abort_nowait(self, request_id: str) -> None:
        """Ask the engine thread to abort `request_id` before its next step (thread-safe, returns at once)."""
        with self._cv:
            self._aborts.append((request_id, None))
            self._cv.notify()

    async def abort(self, request_id: str) -> None:
        """Abort `request_id` and return once its KV-cache blocks are freed (unknown ids: no-op)."""
        done = threading.Event()
        with self._cv:
            if not self._thread.is_alive():  # stopped or failed: nothing holds blocks for callers any more
                return
            self._aborts.append((request_id, done))
            self._cv.notify()
        while not done.is_set() and self._thread.is_alive():
            await asyncio.get_running_loop().run_in_executor(None, done.wait, 0.5)

    def shutdown(self) -> None:
        """Stop the engine thread; unfinished streams get a RuntimeError."""
        with self._cv:
            self._stopped = True
            self._cv.notify()
        self._thread.join(timeout=30)

    close = shutdown  # what the model registry calls when a model is unregistered

    # ---- the engine thread -----------------------------------------------------------------
    def _loop(self) -> None:
        engine = self.engine
        try:
            while True:
                with self._cv:
                    while not (self._adds or self._aborts or self._stopped or engine.has_unfinished_requests()):
                        self._cv.wait()
                    if self._stopped:
                        break
                    adds, self._adds = self._adds, []
                    aborts, self._aborts = self._aborts, []
                for rid, done in aborts:
                    out = engine.abort_request(rid)
                    stream = self._streams.pop(rid, None)
                    if out is not None and stream is not None:
                        stream.put(out)
                    if done is not None:
                        done.set()
                for seq in adds:
                    if seq.request_id not in self._streams:  # aborted before it was added
                        continue
                    try:
                        engine.add_sequence(seq)
                    except ValueError as exc:
                        self._streams.pop(seq.request_id).put(exc)
                if engine.has_unfinished_requests():
                    step = engine.step()
                    self.last_step = step
                    for out in step.outputs:
                        stream = self._streams.get(out.request_id)
                        if stream is None:
                            continue
                        if out.finished:
                            del self._streams[out.request_id]
                        stream.put(out)
        except BaseException as exc:  # a failing forward pass must not leave callers waiting forever
            self._error = exc
            err = RuntimeError(f"generation engine failed: {exc!r}")
            with self._cv:
                for stream in self._streams.values():
                    stream.put(err)
                self._streams.clear()
            raise
        with self._cv:
            for stream in self._streams.values():
                stream.put(RuntimeError("generation engine shut down"))
            self._streams.clear()
