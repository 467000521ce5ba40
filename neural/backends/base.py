"""The backend interface: run a batch of named numpy tensors through a model, get named tensors back."""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from ..signature import Signature


class Backend(ABC):
    """A loaded model on one device. `run` takes and returns batched arrays (batch axis first).

    Attributes: `kind` ("torch" | "onnxruntime"), `signature`, `device`, `dtype` (precision name).
    `run` is called from one worker thread at a time (the batcher's); it must not be re-entered.
    """

    kind: str = ""
    signature: Signature
    device: str
    dtype: str

    @abstractmethod
    def run(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Run one batch. `inputs` maps every signature input name to an array with the batch axis
        first; returns every output name mapped to a float32/int array with the batch axis first."""

    def close(self) -> None:  # noqa: B027 - optional hook, a no-op by default
        """Release device memory and sessions (optional)."""

    def describe(self) -> dict[str, object]:
        return {"backend": self.kind, "device": self.device, "dtype": self.dtype}
