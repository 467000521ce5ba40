"""Runners turn single requests into batches for a backend and split the outputs back.

A runner has three methods used by `ModelEntry` and the batcher:
- `prepare(item)` in the caller's thread: validate/convert one request (raises `InputValidationError`);
- `item_length(prepared)`: its sequence length for bucketing (or None when it has no sequence axis);
- `run_batch(prepared_items, pad_to)` in the batcher's worker thread: one output per item, in order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from .backends.base import Backend
from .signature import Signature


@runtime_checkable
class Runner(Protocol):
    sequence_axis: bool  # True when requests have a length to bucket by
    padding_safe: bool  # True when zero padding along the sequence axis leaves outputs unchanged

    def prepare(self, item: Any) -> Any: ...

    def item_length(self, prepared: Any) -> int | None: ...

    def run_batch(self, items: list[Any], pad_to: int | None) -> Sequence[Any]: ...


class TensorRunner:
    """Runner for tensor models: a request is `{input name: array without the batch axis}`.

    Dynamic non-batch axes are zero-padded to the longest request in the batch. The first dynamic
    axis of the first input that has one gives a request's sequence length; every input axis as long
    as that length in all requests of the batch is padded to `pad_to` (the bucket).
    `padding_safe=False` (default): the model may not mask padding, so its batcher groups only
    requests of identical length (no padding); pass True for models that mask padded positions.
    Outputs are split per request; an output axis 1 that is dynamic and as long as the padded
    sequence is cut back to the request's own length.
    """

    def __init__(
        self, name: str, backend: Backend, signature: Signature | None = None, *, padding_safe: bool = False
    ) -> None:
        self.name = name
        self.padding_safe = padding_safe
        self.backend = backend
        self.signature = signature or backend.signature
        self._seq: tuple[str, int] | None = None
        for spec in self.signature.inputs:
            dyn = [ax for ax, d in enumerate(spec.shape[1:], start=1) if d == -1]
            if dyn:
                self._seq = (spec.name, dyn[0])
                break
        self.sequence_axis = self._seq is not None

    def prepare(self, item: Mapping[str, Any]) -> dict[str, np.ndarray]:
        if not isinstance(item, Mapping):
            raise TypeError(
                f"model {self.name!r}: a request is a mapping of input name to array, got {type(item).__name__}"
            )
        return self.signature.validate(self.name, item, batched=False)

    def item_length(self, prepared: dict[str, np.ndarray]) -> int | None:
        if self._seq is None:
            return None
        name, axis = self._seq
        return int(prepared[name].shape[axis - 1])

    def run_batch(self, items: list[dict[str, np.ndarray]], pad_to: int | None) -> list[dict[str, np.ndarray]]:
        lengths = [self.item_length(it) for it in items]
        batch = {
            spec.name: self._collate([it[spec.name] for it in items], lengths, pad_to) for spec in self.signature.inputs
        }
        out = self.backend.run(batch)
        results: list[dict[str, np.ndarray]] = []
        for i, length in enumerate(lengths):
            one: dict[str, np.ndarray] = {}
            for spec in self.signature.outputs:
                arr = out[spec.name][i]
                if (
                    length is not None
                    and pad_to is not None
                    and arr.ndim >= 1
                    and len(spec.shape) > 1
                    and spec.shape[1] == -1
                    and arr.shape[0] == pad_to
                ):
                    arr = arr[:length]
                one[spec.name] = np.array(arr)  # a copy: never a view into another request's batch
            results.append(one)
        return results

    def _collate(self, arrays: list[np.ndarray], lengths: list[int | None], pad_to: int | None) -> np.ndarray:
        target = list(np.max([a.shape for a in arrays], axis=0)) if arrays[0].ndim else []
        if pad_to is not None and arrays[0].ndim:
            # every axis that is as long as each request's sequence is a sequence axis: pad it to the bucket
            for ax in range(arrays[0].ndim):
                if all(a.shape[ax] == n for a, n in zip(arrays, lengths)):
                    target[ax] = max(target[ax], pad_to)
        out = np.zeros([len(arrays), *target], dtype=arrays[0].dtype)
        for i, a in enumerate(arrays):
            out[(i, *[slice(0, s) for s in a.shape])] = a
        return out
