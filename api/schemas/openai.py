"""OpenAI-compatible request bodies (the fields this server honours; unknown fields are ignored,
as OpenAI-compatible servers do, so any client library works)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

# Ceilings of numeric fields (issue 16: every number a client sends is bounded); the engine still
# refuses a prompt plus max_tokens longer than the model's context.
MAX_TOKENS = 1 << 20
MAX_TOP_K = 1 << 20


class StreamOptions(BaseModel):
    include_usage: bool = False


class _SamplingFields(BaseModel):
    model_config = ConfigDict(extra="ignore")

    model: str = Field(description="A served language model (GET /v1/models).")
    max_tokens: Annotated[int, Field(ge=1, le=MAX_TOKENS)] | None = Field(
        None, description="Most tokens to generate (default 16)."
    )
    temperature: Annotated[float, Field(ge=0.0, le=2.0)] = 1.0
    top_p: Annotated[float, Field(gt=0.0, le=1.0)] = 1.0
    top_k: Annotated[int, Field(ge=-1, le=MAX_TOP_K)] = 0
    n: Literal[1] = Field(1, description="Only n=1 is served.")
    stream: bool = False
    stream_options: StreamOptions | None = None
    stop: str | list[str] | None = None
    stop_token_ids: Annotated[list[Annotated[int, Field(ge=0, le=2**31 - 1)]], Field(max_length=1024)] | None = None
    seed: Annotated[int, Field(ge=-(2**63), le=2**63 - 1)] | None = Field(
        None, description="Sampling seed (a signed 64-bit integer)."
    )
    ignore_eos: bool = False
    presence_penalty: Literal[0, 0.0] = 0.0
    frequency_penalty: Literal[0, 0.0] = 0.0
    logprobs: Any = None
    user: str | None = None
    rails: str | None = Field(
        None, description="Knowledge base applied as input and output rails (block, rewrite, stop)."
    )

    @field_validator("logprobs")
    @classmethod
    def _no_logprobs(cls, v: Any) -> Any:
        if v not in (None, False, 0):
            raise ValueError("logprobs are not served")
        return v

    def sampling(self, default_max_tokens: int = 16) -> dict[str, Any]:
        stop = [self.stop] if isinstance(self.stop, str) else list(self.stop or [])
        return {
            "temperature": self.temperature,
            "top_p": self.top_p,
            "top_k": self.top_k,
            "seed": self.seed,
            "max_tokens": self.max_tokens or default_max_tokens,
            "stop": stop,
            "stop_token_ids": list(self.stop_token_ids or []),
            "ignore_eos": self.ignore_eos,
        }


class CompletionRequest(_SamplingFields):
    """`POST /v1/completions`: one prompt (text or token ids) or a list of them."""

    prompt: str | list[str] | list[int] | list[list[int]]
    echo: Literal[False] = False
    suffix: None = None
    best_of: Literal[1] | None = None

    @field_validator("prompt")
    @classmethod
    def _non_empty(cls, v: Any) -> Any:
        if isinstance(v, list) and not v:
            raise ValueError("the prompt list is empty")
        return v

    def prompts(self) -> list[str | list[int]]:
        p = self.prompt
        if isinstance(p, str):
            return [p]
        if all(isinstance(x, int) for x in p):
            return [list(p)]  # type: ignore[arg-type]
        return list(p)  # type: ignore[arg-type]


class ContentPart(BaseModel):
    type: Literal["text"]
    text: str


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="ignore")

    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[ContentPart] | None = None
    name: str | None = None

    def text(self) -> str:
        if self.content is None:
            return ""
        if isinstance(self.content, str):
            return self.content
        return "".join(p.text for p in self.content)


class ChatCompletionRequest(_SamplingFields):
    """`POST /v1/chat/completions`: messages rendered with the model's chat template."""

    messages: Annotated[list[ChatMessage], Field(min_length=1)]
    max_completion_tokens: Annotated[int, Field(ge=1, le=MAX_TOKENS)] | None = None

    def sampling(self, default_max_tokens: int = 16) -> dict[str, Any]:
        out = super().sampling(default_max_tokens)
        if self.max_completion_tokens is not None:
            out["max_tokens"] = self.max_completion_tokens
        return out
