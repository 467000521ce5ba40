"""Bad configurations and requests fail with errors that name what is wrong."""

from __future__ import annotations

import json
import shutil

import pytest

from neural.generation import EngineConfig, LLMEngine, SamplingParams
from neural.generation.chat import ChatTemplateError, apply_chat_template
from neural.generation.model_config import load_spec


def test_config_and_params_validation():
    with pytest.raises(ValueError, match="block_size"):
        EngineConfig(block_size=0)
    with pytest.raises(ValueError, match="dtype"):
        EngineConfig(dtype="int4")
    with pytest.raises(ValueError, match="top_p"):
        SamplingParams(top_p=0.0)
    with pytest.raises(ValueError, match="temperature"):
        SamplingParams(temperature=-1)
    with pytest.raises(ValueError, match="max_tokens"):
        SamplingParams(max_tokens=0)
    assert SamplingParams(stop="x").stop == ["x"]


def test_unsupported_models_are_named(tmp_path, llama_dir):
    with pytest.raises(FileNotFoundError, match="config.json"):
        load_spec(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "t5"}))
    with pytest.raises(ValueError, match="model_type 't5' is not supported"):
        load_spec(tmp_path)
    scaled = tmp_path / "scaled"
    shutil.copytree(llama_dir, scaled)
    cfg = json.loads((scaled / "config.json").read_text())
    cfg.pop("rope_parameters", None)
    cfg["rope_scaling"] = {"rope_type": "yarn", "factor": 8.0}
    (scaled / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match="'yarn' is not supported"):
        LLMEngine(scaled, EngineConfig(device="cpu"))


def test_engine_rejects_bad_requests(llama_dir):
    engine = LLMEngine(llama_dir, EngineConfig(device="cpu", max_model_len=64, block_size=4))
    with pytest.raises(ValueError, match="exceeds the model's limit"):
        LLMEngine(llama_dir, EngineConfig(device="cpu", max_model_len=10_000))
    with pytest.raises(ValueError, match="cannot hold one sequence"):
        LLMEngine(llama_dir, EngineConfig(device="cpu", max_model_len=64, block_size=4, num_kv_blocks=3))
    with pytest.raises(ValueError, match="prompt is empty"):
        engine.add_request("a", [])
    with pytest.raises(ValueError, match="exceeds max_model_len 64"):
        engine.add_request("a", [1] * 60, SamplingParams(max_tokens=10))
    engine.add_request("a", [1, 2, 3])
    with pytest.raises(ValueError, match="already in the engine"):
        engine.add_request("a", [1, 2, 3])
    assert engine.abort_request("a").finish_reason == "abort"
    assert engine.abort_request("a") is None
    assert not engine.has_unfinished_requests()


def test_chat_template_errors(tmp_path):
    from neural.generation import DEMO_LM_DIR

    with pytest.raises(ChatTemplateError, match=r"messages\[1\]"):
        apply_chat_template(DEMO_LM_DIR, [{"role": "user", "content": "hi"}, {"role": "user"}])
    for f in ("tokenizer.json", "tokenizer_config.json"):
        (tmp_path / f).write_bytes((DEMO_LM_DIR / f).read_bytes())
    (tmp_path / "chat_template.jinja").write_text("{% for %}")
    with pytest.raises(ChatTemplateError, match="refused"):
        apply_chat_template(tmp_path, [{"role": "user", "content": "hi"}])
    (tmp_path / "chat_template.jinja").unlink()
    cfg = json.loads((tmp_path / "tokenizer_config.json").read_text())
    cfg.pop("chat_template", None)
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(cfg))
    assert apply_chat_template(tmp_path, [{"role": "user", "content": "hi"}]) == "user: hi\nassistant:"
    with pytest.raises(ChatTemplateError, match="no chat template"):
        apply_chat_template(tmp_path, [{"role": "user", "content": "hi"}], fallback=False)
