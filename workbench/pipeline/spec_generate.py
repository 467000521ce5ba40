"""The `generate` node's fields: prompt templates, sampling fields, rails; their structural checks.

A generate node runs a causal LM of the catalogue:

    - id: generate
      type: generate
      model: demo-lm
      prompt: "{input.prompt}"          # a template: `{EXPRESSION}` over upstream values and facts
      # or messages: [{role: user, content: "{input.question}"}]   (the model's chat template)
      max_tokens: 120                   # sampling fields: literals, or expressions as strings
      temperature: 0.8
      seed: "input.seed"
      stop: ["\\n\\n"]
      rails: {knowledge_base: demo_rails, every: 8}     # or every: sentence | word
      facts: [{template: generation, slots: {text: text, finish_reason: finish_reason}}]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .errors import Issue
from .expressions import ExpressionError, compile_expression

# field -> (python type of a literal, lowest allowed value)
SAMPLING_FIELDS: dict[str, tuple[type, float | None]] = {
    "max_tokens": (int, 1),
    "min_tokens": (int, 0),
    "temperature": (float, 0.0),
    "top_p": (float, 0.0),
    "top_k": (int, -1),
    "seed": (int, None),
}
GENERATE_FIELDS = (
    "model",
    "prompt",
    "messages",
    *SAMPLING_FIELDS,
    "stop",
    "ignore_eos",
    "rails",
    "facts",
    "timeout_s",
)
CHAT_ROLES = ("system", "developer", "user", "assistant", "tool")


class PromptTemplate:
    """Text with `{EXPRESSION}` parts (`{{` and `}}` are literal braces), rendered over a scope.

    Raises ExpressionError (with the column in the template) for an unclosed brace or an
    expression outside the language.
    """

    __slots__ = ("text", "parts")

    def __init__(self, text: str, functions: frozenset[str]) -> None:
        self.text = text
        self.parts: list[Any] = []
        buf, i, n = [], 0, len(text)
        while i < n:
            c = text[i]
            if c in "{}" and i + 1 < n and text[i + 1] == c:
                buf.append(c)
                i += 2
                continue
            if c == "}":
                raise ExpressionError(text, "unmatched '}' in the prompt template (write '}}' for a brace)", i + 1)
            if c == "{":
                end = text.find("}", i + 1)
                if end < 0:
                    raise ExpressionError(text, "unclosed '{' in the prompt template (write '{{' for a brace)", i + 1)
                if buf:
                    self.parts.append("".join(buf))
                    buf = []
                self.parts.append(compile_expression(text[i + 1 : end].strip(), functions))
                i = end + 1
                continue
            buf.append(c)
            i += 1
        if buf:
            self.parts.append("".join(buf))

    @property
    def names(self) -> set[str]:
        out: set[str] = set()
        for p in self.parts:
            if not isinstance(p, str):
                out |= set(p.names)
        return out

    def render(self, scope: Any, functions: Any) -> str:
        """The text with each expression's value (str; a missing value raises ExpressionError)."""
        out = []
        for p in self.parts:
            if isinstance(p, str):
                out.append(p)
                continue
            v = p.evaluate(scope, functions)
            if v is None:
                raise ExpressionError(p.text, "gave no value (missing input or fact)")
            out.append(v if isinstance(v, str) else str(v))
        return "".join(out)


@dataclass(slots=True, frozen=True)
class RailsSpec:
    """`rails:` of a generate node: the knowledge base checked on the growing text, and when.

    every: tokens between checks (an int >= 1), "sentence" (at each sentence end) or "word" (in whole
    words, as the OpenAI-compatible routes' `rails` do).
    """

    knowledge_base: str
    every: int | str = 8

    @classmethod
    def from_config(cls, value: Any) -> RailsSpec | None:
        if value is None:
            return None
        return cls(value["knowledge_base"], value.get("every", 8))


def check_generate(pipe: Any, n: Any, funcs: frozenset[str]) -> list[Issue]:
    """Structural issues of a generate node's own fields (the shared ones are checked by the caller)."""
    out: list[Issue] = []
    c = n.config

    def bad(fld: str, msg: str) -> None:
        out.append(pipe.issue(n.id, fld, msg))

    if "model" in c and not isinstance(c["model"], str):
        bad("model", "expected a model name (a causal LM of the catalogue)")
    if ("prompt" in c) == ("messages" in c):
        bad("prompt", "give exactly one of 'prompt' (a template) or 'messages' (chat)")
    if "prompt" in c:
        if not isinstance(c["prompt"], str):
            bad("prompt", "expected a template string such as '{input.prompt}'")
        else:
            _check_template(bad, "prompt", c["prompt"], funcs)
    if "messages" in c:
        msgs = c["messages"]
        if not isinstance(msgs, list) or not msgs:
            bad("messages", "expected a non-empty list of {role, content}")
        else:
            for i, m in enumerate(msgs):
                if not isinstance(m, dict) or set(m) != {"role", "content"}:
                    bad(f"messages[{i}]", "expected {role: ROLE, content: TEMPLATE}")
                    continue
                if m["role"] not in CHAT_ROLES:
                    bad(f"messages[{i}].role", f"expected one of {', '.join(CHAT_ROLES)}, got {m['role']!r}")
                if not isinstance(m["content"], str):
                    bad(f"messages[{i}].content", "expected a template string")
                else:
                    _check_template(bad, f"messages[{i}].content", m["content"], funcs)
    for key, (typ, low) in SAMPLING_FIELDS.items():
        if key not in c:
            continue
        v = c[key]
        if isinstance(v, str):
            try:
                compile_expression(v, funcs)
            except ExpressionError as exc:
                bad(key, str(exc))
            continue
        ok_type = isinstance(v, (int, float)) if typ is float else isinstance(v, int)
        if isinstance(v, bool) or not ok_type or (low is not None and v < low):
            want = "an integer" if typ is int else "a number"
            bad(key, f"expected {want}{f' >= {low}' if low is not None else ''} or an expression, got {v!r}")
    if isinstance(c.get("top_p"), (int, float)) and not 0 < c["top_p"] <= 1:
        bad("top_p", f"expected a number in (0, 1], got {c['top_p']!r}")
    if "stop" in c and not (
        isinstance(c["stop"], str) or (isinstance(c["stop"], list) and all(isinstance(s, str) and s for s in c["stop"]))
    ):
        bad("stop", "expected a string or a list of non-empty strings")
    if "ignore_eos" in c and not isinstance(c["ignore_eos"], bool):
        bad("ignore_eos", "expected true or false")
    if "rails" in c:
        r = c["rails"]
        if not isinstance(r, dict) or "knowledge_base" not in r or set(r) - {"knowledge_base", "every"}:
            bad("rails", "expected {knowledge_base: NAME, every: TOKENS | sentence | word}")
        else:
            if not isinstance(r["knowledge_base"], str) or not r["knowledge_base"]:
                bad("rails.knowledge_base", "expected a knowledge base name or path")
            every = r.get("every", 8)
            if every not in ("sentence", "word") and (
                isinstance(every, bool) or not isinstance(every, int) or every < 1
            ):
                bad("rails.every", f"expected a number of tokens >= 1, 'sentence' or 'word', got {every!r}")
    return out


def _check_template(bad: Any, fld: str, text: str, funcs: frozenset[str]) -> None:
    try:
        PromptTemplate(text, funcs)
    except ExpressionError as exc:
        bad(fld, str(exc))
