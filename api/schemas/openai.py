"""OpenAI-compatible request bodies: OpenAI's fields this server honours, vLLM's extra sampling
fields (`ignore_eos`, `min_tokens`, `include_stop_str_in_output`, `stop_token_ids`, `top_k`) and
`rails`. Any other field is refused by name (400), never ignored: a client that sends
`logit_bias` or `tools` learns that they are not applied."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

# Ceilings of numeric fields (issue 16: every number a client sends is bounded); the engine still
# refuses a prompt plus max_tokens longer than the model's context.
MAX_TOKENS = 1 << 20
MAX_TOP_K = 1 << 20


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    include_usage: bool = Field(False, strict=True)


class _SamplingFields(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)  # NaN, Infinity, 1e400: not finite numbers

    model: str = Field(description="A served language model (GET /v1/models).")
    max_tokens: Annotated[int, Field(ge=1, le=MAX_TOKENS)] | None = Field(
        None, description="Most tokens to generate (completions: 16; chat: the rest of the context)."
    )
    min_tokens: Annotated[int, Field(ge=0, le=MAX_TOKENS)] = Field(
        0, description="vLLM: fewest tokens before EOS, stop_token_ids or stop strings may end the generation."
    )
    include_stop_str_in_output: bool = Field(
        False, strict=True, description="vLLM: keep the matched stop string in the text."
    )
    temperature: Annotated[float, Field(ge=0.0, le=2.0)] = 1.0
    top_p: Annotated[float, Field(gt=0.0, le=1.0)] = 1.0
    top_k: Annotated[int, Field(ge=-1, le=MAX_TOP_K)] = 0
    n: Literal[1] = Field(1, description="Only n=1 is served.")
    stream: bool = Field(False, strict=True)  # JSON true or false, as OpenAI's API takes it
    stream_options: StreamOptions | None = None
    stop: str | list[str] | None = None
    stop_token_ids: Annotated[list[Annotated[int, Field(ge=0, le=2**31 - 1)]], Field(max_length=1024)] | None = None
    seed: Annotated[int, Field(ge=-(2**63), le=2**63 - 1)] | None = Field(
        None, description="Sampling seed (a signed 64-bit integer)."
    )
    ignore_eos: bool = Field(False, strict=True)
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

    @model_validator(mode="after")
    def _stream_options_need_stream(self) -> Any:
        if self.stream_options is not None and not self.stream:
            raise ValueError("stream_options is only allowed together with stream: true")
        return self

    def sampling(self, default_max_tokens: int | None = 16) -> dict[str, Any]:
        """`neural.generation.SamplingParams` fields; `max_tokens` None means the rest of the context."""
        stop = [self.stop] if isinstance(self.stop, str) else list(self.stop or [])
        return {
            "temperature": self.temperature,
            "top_p": self.top_p,
            "top_k": self.top_k,
            "seed": self.seed,
            "max_tokens": self.max_tokens or default_max_tokens,
            "min_tokens": self.min_tokens,
            "stop": stop,
            "stop_token_ids": list(self.stop_token_ids or []),
            "ignore_eos": self.ignore_eos,
            "include_stop_str_in_output": self.include_stop_str_in_output,
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
    model_config = ConfigDict(extra="forbid")

    type: Literal["text"]
    text: str


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="forbid")

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
    """`POST /v1/chat/completions`: messages rendered with the model's chat template. Without
    `max_tokens` / `max_completion_tokens` the reply may use the rest of the context (as vLLM)."""

    messages: Annotated[list[ChatMessage], Field(min_length=1)]
    max_completion_tokens: Annotated[int, Field(ge=1, le=MAX_TOKENS)] | None = None

    def sampling(self, default_max_tokens: int | None = None) -> dict[str, Any]:
        out = super().sampling(default_max_tokens)
        if self.max_completion_tokens is not None:
            out["max_tokens"] = self.max_completion_tokens
        return out


# ---- responses (documented shapes; the routes build them as JSON) ---------------------------------------
class Usage(BaseModel):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class CompletionChoice(BaseModel):
    index: int
    text: str
    logprobs: None = None
    finish_reason: str | None = Field(description="stop | length | content_filter (rails) | abort")


class Completion(BaseModel):
    """`POST /v1/completions` without streaming (with `stream: true`: `text_completion` chunks as SSE)."""

    id: str
    object: Literal["text_completion"]
    created: int
    model: str
    choices: list[CompletionChoice]
    usage: Usage


class AssistantMessage(BaseModel):
    role: Literal["assistant"]
    content: str


class ChatChoice(BaseModel):
    index: int
    message: AssistantMessage
    logprobs: None = None
    finish_reason: str | None


class ChatCompletion(BaseModel):
    """`POST /v1/chat/completions` without streaming (with `stream: true`: `chat.completion.chunk` SSE)."""

    id: str
    object: Literal["chat.completion"]
    created: int
    model: str
    choices: list[ChatChoice]
    usage: Usage


class ModelCard(BaseModel):
    id: str
    object: Literal["model"]
    created: int
    owned_by: str
    max_model_len: int


class ModelList(BaseModel):
    object: Literal["list"]
    data: list[ModelCard]
