"""The small network of the digits demo: an MLP over scikit-learn's 8x8 handwritten digits.

Kept in its own module so that the training script, the torch backend (safetensors weights +
this class) and the tests build exactly the same graph.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import nn

PIXEL_MAX = 16.0  # load_digits pixels are integers 0..16


@dataclass(slots=True)
class DigitsNetConfig:
    """Architecture of `DigitsNet`.

    Attributes:
        in_features: pixels per image (8 x 8 = 64).
        hidden: widths of the hidden layers.
        num_classes: 10 digit classes.
        dropout: dropout probability during training (inactive at inference).
    """

    in_features: int = 64
    hidden: list[int] = field(default_factory=lambda: [128, 64])
    num_classes: int = 10
    dropout: float = 0.2

    def __post_init__(self) -> None:
        if self.in_features < 1 or self.num_classes < 2:
            raise ValueError(
                f"DigitsNetConfig: in_features {self.in_features} / num_classes {self.num_classes} out of range"
            )
        if not self.hidden or any(int(h) < 1 for h in self.hidden):
            raise ValueError(f"DigitsNetConfig.hidden must be a non-empty list of positive widths, got {self.hidden!r}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"DigitsNetConfig.dropout must be in [0, 1), got {self.dropout!r}")


class DigitsNet(nn.Module):
    """MLP: pixels float32 [N, 64] with values 0..16 -> logits float32 [N, 10].

    The 0..16 -> 0..1 scaling is part of the graph, so the ONNX export takes raw pixels too.
    """

    def __init__(self, config: DigitsNetConfig) -> None:
        super().__init__()
        self.config = config
        layers: list[nn.Module] = []
        width = config.in_features
        for h in config.hidden:
            layers += [nn.Linear(width, int(h)), nn.ReLU(), nn.Dropout(config.dropout)]
            width = int(h)
        layers.append(nn.Linear(width, config.num_classes))
        self.layers = nn.Sequential(*layers)

    def forward(self, pixels: torch.Tensor) -> torch.Tensor:
        return self.layers(pixels / PIXEL_MAX)
