"""Chat templates: the one place that turns chat messages into a prompt.

The template is rendered by transformers' `apply_chat_template` on the folder's tokenizer, so
the template file is picked, and rendered, exactly as transformers does (`chat_template.jinja`,
else `tokenizer_config.json["chat_template"]`; sandboxed Jinja; the tokenizer's special tokens;
`add_generation_prompt=True`). A folder without a template gets the documented plain fallback:
one `role: content` line per message, then `assistant:`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .tokenizer import has_tokenizer, hf_tokenizer


class ChatTemplateError(ValueError):
    """The messages are malformed, or the model's template refused them (e.g. role order)."""


def check_messages(messages: Any) -> list[dict[str, str]]:
    """`[{"role": str, "content": str}]` or ChatTemplateError naming the message index."""
    if not isinstance(messages, list) or not messages:
        raise ChatTemplateError("messages: expected a non-empty list of {'role': str, 'content': str}")
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or not isinstance(m.get("role"), str) or not isinstance(m.get("content"), str):
            raise ChatTemplateError(f"messages[{i}]: expected {{'role': str, 'content': str}}, got {m!r}")
    return messages


def load_chat_template(model_dir: str | Path) -> str | None:
    """The folder's chat template text as transformers reads it, else None."""
    if not has_tokenizer(model_dir):
        return None
    try:
        tpl = hf_tokenizer(model_dir).chat_template
    except ValueError:
        return None
    if isinstance(tpl, dict):  # named templates: the default one
        tpl = tpl.get("default")
    return tpl if isinstance(tpl, str) else None


def apply_chat_template(
    model_dir: str | Path, messages: list[dict[str, str]], add_generation_prompt: bool = True, fallback: bool = True
) -> str:
    """Prompt text for chat `messages` with the model folder's chat template.

    Args:
        messages: `[{"role": ..., "content": ...}]`.
        fallback: a folder without a template gets `role: content` lines and `assistant:`;
            False raises ChatTemplateError instead.
    Raises:
        ChatTemplateError: malformed messages, a template error, or no template (fallback=False).
    """
    check_messages(messages)
    template = load_chat_template(model_dir)
    if template is None:
        if not fallback:
            raise ChatTemplateError(f"{model_dir}: no chat template (chat_template.jinja or tokenizer_config.json)")
        lines = "".join(f"{m['role']}: {m['content']}\n" for m in messages)
        return lines + ("assistant:" if add_generation_prompt else "")
    tok = hf_tokenizer(model_dir)
    try:
        return tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=add_generation_prompt)
    except Exception as exc:  # jinja2.TemplateError, or the template's raise_exception()
        raise ChatTemplateError(f"the chat template refused the messages: {exc}") from None
