"""A generation engine seen through a Ray generation replica's stream, without Ray: for tests that check
that what a caller records or answers does not depend on how the engine's steps reach it."""

from __future__ import annotations


class DelayedReplicaStream:
    """An `AsyncLLMEngine` as a pipeline replica or the ingress sees it through the Ray generation replica's
    stream (`workbench.scale.generation.GenerationReplica.generate`, run here without Ray): outputs go out
    every `interval_s`, the engine steps in between merged into one item, so whatever the rails decide
    reaches the decode late, after the engine has produced more tokens. `merged`: items that merged steps."""

    def __init__(self, engine, interval_s: float) -> None:
        from types import SimpleNamespace

        from workbench.scale.generation import GenerationReplica

        self.replica = object.__new__(GenerationReplica)  # its async __init__ loads models: not needed here
        self.replica.entries, self.replica.cancelled = {"lm": SimpleNamespace(backend=engine)}, {}
        self.inner, self.interval_s, self.merged = engine, interval_s, 0
        self.engine = engine.engine  # what `Serving` reads of a served LM (context length, KV blocks)

    async def generate(self, prompt, params, request_id):
        from workbench.scale.generation import RemoteFailure

        async for out in self.replica.generate("lm", prompt, params, request_id, self.interval_s):
            if isinstance(out, RemoteFailure):
                raise out.exc
            self.merged += len(out.step_deltas()) > 1
            yield out

    async def abort(self, request_id):
        await self.inner.abort(request_id)

    def abort_nowait(self, request_id):
        self.inner.abort_nowait(request_id)
