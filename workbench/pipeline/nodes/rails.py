"""Rails inside a decode: the one implementation behind a `generate` node's `rails` and the
OpenAI-compatible routes' `rails` option (`workbench.serving.generation`).

Generated text is held back and handed to the rails at check points: every N tokens, at each
sentence end (`"sentence"`) or in whole words (`"word"`: a chunk ends at white space), and always
at the finish. Each check runs the rails knowledge base on

    (completion (text "<all shown so far + chunk>") (delta "<chunk>") (tokens N) (finished TRUE|FALSE))

and its last `rail` fact decides: `allow` (or none) shows the chunk, `redact`/`rewrite` show the
rail's `text` instead of the chunk, `replace` makes its `text` everything shown so far, `stop`
shows its `text` instead of the chunk and ends the decode (the caller aborts the request, which
frees its KV-cache blocks). How the knowledge base is run (on a pool thread, with a trace for a pipeline's
run) is the caller's `check`; what a check point is and what a verdict does is decided here.
"""

from __future__ import annotations

import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

RAIL_ACTIONS = ("allow", "redact", "rewrite", "replace", "stop")
_SENTENCE_END = re.compile(r"[.!?;:][\"')\]]*(?=\s)|\n")

# (text, delta, tokens, finished) -> the verdict `{"action", "text", "reason"}`, or None for allow
RailCheck = Callable[[str, str, int, bool], Awaitable[dict[str, str] | None]]


# What a rails knowledge base must define, template -> slots: the `completion` facts this module's checks assert
# and the `rail` facts `rail_verdict` reads (a rail's `text` and `reason` when present); the OpenAI routes'
# input rail also asserts `prompt`.
RAIL_TEMPLATES = {"completion": ("text", "delta", "tokens", "finished"), "rail": ("action",)}
PROMPT_TEMPLATE = {"prompt": ("text",)}


def missing_rail_templates(kb: Any, templates: dict[str, tuple[str, ...]] = RAIL_TEMPLATES) -> list[str]:
    """What `kb` (a `rules.KnowledgeBase`) lacks of `templates`: `deftemplate T` or `slot S of T`, in order."""
    missing = []
    for template, slots in templates.items():
        found = kb.templates.get(template)
        if found is None:
            missing.append(f"deftemplate {template}")
        else:
            missing += [f"slot {slot} of {template}" for slot in slots if slot not in found.slots]
    return missing


class RailActionError(ValueError):
    """A rails knowledge base asserted a `rail` fact whose action is not one the caller accepts."""


@dataclass(slots=True)
class Step:
    """What the decode produced since the previous step: new raw text, tokens generated so far."""

    delta: str
    tokens: int
    finished: bool
    finish_reason: str | None = None
    prompt_tokens: int = 0
    running: int | None = None  # sequences in the engine step that produced this one (batch size)


def completion_fact(text: str, delta: str, tokens: int, finished: bool) -> Any:
    """The `completion` fact a check hands to the rails knowledge base."""
    from rules.facts import Fact, String

    return Fact("completion", {"text": String(text), "delta": String(delta), "tokens": tokens, "finished": finished})


def rail_verdict(rails: list[Any], kb: str, actions: tuple[str, ...] = RAIL_ACTIONS) -> dict[str, str] | None:
    """The verdict of the last of the `rail` facts a check left in working memory:
    `{"action", "text", "reason"}`, or None when there is none or it allows. Raises RailActionError
    for an action not in `actions`."""
    if not rails:
        return None
    slots = rails[-1].slots
    action = str(slots.get("action", "allow")).lower()
    if action not in actions:
        raise RailActionError(f"rails {kb!r}: rail action {action!r}; expected one of {', '.join(actions)}")
    if action == "allow":
        return None
    text = slots.get("text", "")
    return {
        "action": action,
        "text": "" if text in (None, "nil") else str(text),
        "reason": str(slots.get("reason", "")),
    }


class RailedDecode:
    """Holds generated text back until a check point, applies the rails' verdicts, yields what is shown.

    `check`: runs the rails (None: no rails, every step is shown as it comes). `every`: tokens between
    checks (int >= 1), "sentence" or "word". `on_verdict(verdict)`: called for each verdict that is not
    allow, with the token count added. After `run` ends: `shown` (text given to the client), `raw` (model
    text checked), `stopped`, `finish_reason` ("rail_stop" after a stop), `checks`, `verdicts`, TTFT.

    Token counts are those of the step that reached the check point (`N` for `every: N`; for a sentence
    or word end, the step whose text revealed it). After a stop nothing later is read: tokens the engine
    produced before the abort reached it never count. `steps` must be one per engine step (split an
    output that merges several, `RequestOutput.step_deltas`), or check points and counts would depend on
    how many steps a transport merged, i.e. on timing.
    """

    def __init__(
        self,
        check: RailCheck | None,
        every: int | str | None,
        on_verdict: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        self.check, self.every, self.on_verdict = check, every, on_verdict
        self.raw = ""  # model text handed to the rails so far
        self.shown = ""  # what the client was given
        self.pending = ""
        self.tokens = self.prompt_tokens = 0
        self.checked_tokens = 0
        self.finish_reason: str | None = None
        self.model_finish_reason: str | None = None
        self.stopped = False
        self.replaced = False  # the last check replaced everything shown so far
        self.checks: list[dict[str, Any]] = []
        self.verdicts: list[dict[str, Any]] = []
        self.ttft_s: float | None = None
        self.last_token_s: float | None = None
        self.running: list[int] = []
        self._t0 = time.perf_counter()

    def _cut(self, step: Step) -> int:
        """How much of `pending` goes to the rails now (0: keep holding)."""
        if step.finished or self.check is None:
            return len(self.pending)
        if self.every == "sentence":
            ends = [m.end() for m in _SENTENCE_END.finditer(self.pending)]
            return ends[-1] if ends else 0
        if self.every == "word":
            return max(self.pending.rfind(" "), self.pending.rfind("\n")) + 1
        return len(self.pending) if step.tokens - self.checked_tokens >= int(self.every or 1) else 0

    async def run(self, steps: AsyncIterator[Step]) -> AsyncIterator[str]:
        """Consume the decode's steps; yield the text shown at each check point (may be empty)."""
        async for step in steps:
            if step.tokens and step.tokens != self.tokens:
                self.last_token_s = time.perf_counter() - self._t0
                if self.ttft_s is None:
                    self.ttft_s = self.last_token_s
            if step.running:
                self.running.append(step.running)
            self.tokens, self.prompt_tokens = step.tokens, step.prompt_tokens or self.prompt_tokens
            self.pending += step.delta
            if step.finished:
                self.model_finish_reason = self.finish_reason = step.finish_reason
            cut = self._cut(step)
            if cut == 0 and not step.finished:
                continue
            chunk, self.pending = self.pending[:cut], self.pending[cut:]
            self.raw += chunk
            self.checked_tokens = step.tokens
            yield await self._apply(chunk, step)
            if self.stopped or step.finished:
                return

    async def _apply(self, chunk: str, step: Step) -> str:
        self.replaced = False
        self.checks.append({"raw": chunk, "tokens": step.tokens})
        verdict = (
            None if self.check is None else await self.check(self.shown + chunk, chunk, step.tokens, step.finished)
        )
        if verdict is None:
            self.shown += chunk
            return chunk
        verdict = {**verdict, "tokens": step.tokens}
        self.verdicts.append(verdict)
        if self.on_verdict is not None:
            self.on_verdict(verdict)
        action = verdict["action"]
        if action == "replace":
            self.shown, self.replaced = verdict["text"], True
            return verdict["text"]
        self.shown += verdict["text"]
        if action == "stop":
            self.stopped = True
            self.finish_reason = "rail_stop"
        return verdict["text"]
