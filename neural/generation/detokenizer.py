"""Incremental detokenisation and stop strings.

Decoding one token at a time is wrong for byte-level BPE (a multi-byte UTF-8 character can
span tokens) and for SentencePiece (a token's leading space depends on its neighbours). As in
vLLM, each step decodes a short window `ids[prefix_offset:]` and the window without the new
tokens `ids[prefix_offset:read_offset]`; the difference is the new text, held back while it
ends in U+FFFD (an incomplete UTF-8 sequence). Stop strings are searched in the text added
this step plus the tail before it that a stop string could straddle, and text that might be
the beginning of a stop string is not streamed until it is resolved.
"""

from __future__ import annotations

from tokenizers import Tokenizer


class IncrementalDetokenizer:
    """Turns one request's generated token ids into text, step by step.

    `output_text` is the text so far (stop string cut off); `emit()` returns the part not yet
    streamed that is safe to stream.
    """

    def __init__(
        self,
        tokenizer: Tokenizer,
        prompt_ids: list[int],
        stop: list[str],
        include_stop: bool,
        skip_special_tokens: bool,
    ) -> None:
        self.tokenizer = tokenizer
        self.ids = list(prompt_ids[-6:])  # a little prompt context for leading-space rules
        self.prefix_offset = 0
        self.read_offset = len(self.ids)
        self.stop = stop
        self.include_stop = include_stop
        self.skip_special = skip_special_tokens
        self.max_stop_len = max((len(s) for s in stop), default=0)
        self.output_text = ""
        self.emitted = 0
        self.checked = 0  # text before this offset is never searched for stop strings (min_tokens)

    def _decode(self, ids: list[int]) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=self.skip_special)

    def add_token(self, token_id: int, check_stop: bool = True) -> str | None:
        """Append one generated token; returns the stop string it completed, if any.

        check_stop=False (before `min_tokens`): the text grows but no stop string ends it.
        """
        self.ids.append(token_id)
        prefix_text = self._decode(self.ids[self.prefix_offset : self.read_offset])
        new_text = self._decode(self.ids[self.prefix_offset :])
        if len(new_text) <= len(prefix_text) or new_text.endswith("\ufffd"):
            return None  # nothing printable yet (incomplete character or a skipped special token)
        before = len(self.output_text)
        self.output_text += new_text[len(prefix_text) :]
        self.prefix_offset, self.read_offset = self.read_offset, len(self.ids)
        if not check_stop:
            self.checked = len(self.output_text)
            return None
        return self._check_stop(max(before, self.checked))

    def flush(self) -> None:
        """At the end: append whatever is left undecoded (an incomplete character shows as U+FFFD)."""
        prefix_text = self._decode(self.ids[self.prefix_offset : self.read_offset])
        new_text = self._decode(self.ids[self.prefix_offset :])
        if len(new_text) > len(prefix_text):
            self.output_text += new_text[len(prefix_text) :]
        self.prefix_offset = self.read_offset = len(self.ids)

    def _check_stop(self, before: int) -> str | None:
        if not self.stop:
            return None
        lo = max(0, before - self.max_stop_len + 1)
        best: tuple[int, str] | None = None
        for s in self.stop:
            i = self.output_text.find(s, lo)
            if i >= 0 and (best is None or i < best[0]):
                best = (i, s)
        if best is None:
            return None
        i, s = best
        self.output_text = self.output_text[: i + len(s) if self.include_stop else i]
        return s

    def _holdback(self) -> int:
        """Length of the longest tail of the text that is a proper prefix of a stop string."""
        text = self.output_text
        for k in range(min(self.max_stop_len - 1, len(text)), 0, -1):
            tail = text[-k:]
            if any(s.startswith(tail) for s in self.stop):
                return k
        return 0

    def emit(self, finished: bool) -> str:
        """The text to stream now: everything new, minus a possible stop-string prefix unless finished."""
        end = len(self.output_text) if finished else len(self.output_text) - self._holdback()
        if end <= self.emitted:
            return ""
        delta = self.output_text[self.emitted : end]
        self.emitted = end
        return delta
