"""Torch modules that put pooling and normalisation inside the graph, so ONNX exports include them."""

from __future__ import annotations

import torch


class SentenceEmbedding(torch.nn.Module):
    """Encoder + pooling (+ L2 normalisation), as sentence-transformers computes it.

    forward(input_ids int64 [B, L], attention_mask int64 [B, L], token_type_ids int64 [B, L])
    -> sentence_embedding float [B, H]. Mean pooling: sum of the masked token states divided by the
    number of real tokens (clamped at 1e-9); normalisation: x / max(||x||_2, 1e-12).
    Source: sentence-transformers `models.Pooling` and `models.Normalize`.
    """

    def __init__(self, encoder: torch.nn.Module, pooling: str = "mean", normalize: bool = True) -> None:
        super().__init__()
        if pooling not in ("mean", "cls", "max"):
            raise ValueError(f"unknown pooling {pooling!r}; accepted: mean, cls, max")
        self.encoder = encoder
        self.pooling = pooling
        self.normalize = normalize

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor
    ) -> torch.Tensor:
        hidden = self.encoder(
            input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
        ).last_hidden_state
        mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
        if self.pooling == "mean":
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
        elif self.pooling == "cls":
            pooled = hidden[:, 0]
        else:
            pooled = hidden.masked_fill(mask == 0, torch.finfo(hidden.dtype).min).max(1).values
        if self.normalize:
            pooled = torch.nn.functional.normalize(pooled, p=2, dim=1)
        return pooled


class SequenceClassification(torch.nn.Module):
    """forward(input_ids, attention_mask, token_type_ids) -> logits float [B, num_labels]."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor
    ) -> torch.Tensor:
        return self.model(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids).logits
