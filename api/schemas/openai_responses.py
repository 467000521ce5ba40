"""Response models of the OpenAI-compatible routes (the fields OpenAI's clients read)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class ModelCard(_Open):
    id: str
    object: Literal["model"] = "model"
    created: int
    owned_by: str
    max_model_len: int | None = None


class ModelList(_Open):
    object: Literal["list"] = "list"
    data: list[ModelCard]


class Usage(_Open):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class CompletionChoice(_Open):
    index: int
    text: str
    logprobs: Any = None
    finish_reason: str | None = None


class Completion(_Open):
    id: str
    object: Literal["text_completion"]
    created: int
    model: str
    choices: list[CompletionChoice]
    usage: Usage | None = None


class ChatMessageOut(_Open):
    role: Literal["assistant"]
    content: str | None = None


class ChatChoice(_Open):
    index: int
    message: ChatMessageOut
    logprobs: Any = None
    finish_reason: str | None = None


class ChatCompletion(_Open):
    id: str
    object: Literal["chat.completion"]
    created: int
    model: str
    choices: list[ChatChoice]
    usage: Usage | None = None


def sse_responses(model: type[BaseModel]) -> dict[int | str, dict[str, Any]]:
    """OpenAPI `responses` of a route answering `model` as JSON, or server-sent events with `stream: true`."""
    return {
        200: {
            "model": model,
            "description": "The result; with `stream: true`, `text/event-stream` of `data: {chunk}` lines ending "
            "with `data: [DONE]`.",
            "content": {"text/event-stream": {"schema": {"type": "string"}}},
        }
    }
