"""Chat templates: render a list of messages into a prompt with the model's Jinja template.

As transformers does: a sandboxed Jinja environment with `trim_blocks` and `lstrip_blocks`,
variables `messages`, `add_generation_prompt` and the tokenizer's special tokens. (jinja2 is
installed with torch and transformers.)
"""

from __future__ import annotations

import json
from pathlib import Path


def load_chat_template(model_dir: str | Path) -> str | None:
    """The template from `chat_template.jinja` or `tokenizer_config.json["chat_template"]`, else None."""
    root = Path(model_dir)
    jinja = root / "chat_template.jinja"
    if jinja.is_file():
        return jinja.read_text()
    cfg = root / "tokenizer_config.json"
    if cfg.is_file():
        tpl = json.loads(cfg.read_text()).get("chat_template")
        return tpl if isinstance(tpl, str) else None
    return None


def special_tokens(model_dir: str | Path) -> dict[str, str]:
    """bos_token / eos_token / pad_token strings from tokenizer_config.json (empty if absent)."""
    cfg = Path(model_dir) / "tokenizer_config.json"
    if not cfg.is_file():
        return {}
    data = json.loads(cfg.read_text())
    out = {}
    for key in ("bos_token", "eos_token", "pad_token"):
        v = data.get(key)
        if isinstance(v, dict):
            v = v.get("content")
        if isinstance(v, str):
            out[key] = v
    return out


def render_chat(template: str, messages: list[dict[str, str]], add_generation_prompt: bool = True, **variables) -> str:
    """Render `messages` (`[{"role": ..., "content": ...}]`) with `template`.

    Raises ValueError naming the message index for a message without a string role/content,
    and for a template error.
    """
    from jinja2 import TemplateError
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    for i, m in enumerate(messages):
        if not isinstance(m, dict) or not isinstance(m.get("role"), str) or not isinstance(m.get("content"), str):
            raise ValueError(f"messages[{i}]: expected {{'role': str, 'content': str}}, got {m!r}")
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    try:
        return env.from_string(template).render(
            messages=messages, add_generation_prompt=add_generation_prompt, **variables
        )
    except TemplateError as exc:
        raise ValueError(f"chat template error: {exc}") from exc
