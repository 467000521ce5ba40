"""The Workbench facade's knowledge-base, model and metrics surface (what the API and the TUI call)."""

from __future__ import annotations

import pytest

from workbench.pipeline import (
    KnowledgeBaseError,
    KnowledgeBaseNotFoundError,
    ModelNotFoundError,
    PipelineNotFoundError,
    RunNotFoundError,
)

FAMILY_FACTS = [{"template": "parent", "values": ["tom", "bob"]}, {"template": "parent", "values": ["bob", "otto"]}]


def test_knowledge_bases_list_run_ask_upload_check(wb):
    names = {k["name"] for k in wb.list_knowledge_bases()}
    assert {"family", "image_gate", "confidence_review", "runaway"} <= names
    res = wb.run_knowledge_base("family", FAMILY_FACTS)
    assert ("grandparent", ("tom", "otto")) in {(f.template, tuple(f.values)) for f in res.facts}
    ans = wb.ask("family", "(ancestor ?x otto)", FAMILY_FACTS, all=True)
    assert ans["proved"] and {a["bindings"]["x"] for a in ans["answers"]} == {"tom", "bob"}
    kb = wb.upload_knowledge_base("tiny", '(defrule hello => (printout t "hi" crlf))\n')
    assert kb.version and (wb.knowledge_base_dir / "tiny.clp").is_file()
    assert wb.run_knowledge_base("tiny").output == "hi\n"
    with pytest.raises(KnowledgeBaseError) as ei:
        wb.upload_knowledge_base("broken", "(defrule x (a ?y) => (printout t ?z crlf))\n")
    assert ei.value.diagnostics and not (wb.knowledge_base_dir / "broken.clp").exists()
    diags = wb.check_knowledge_base([("draft.clp", "(defrule r (a) =>\n")])
    assert diags and diags[0].file == "draft.clp" and diags[0].line >= 1
    assert wb.check_knowledge_base([("ok.clp", "(defrule r (a) => (assert (b)))\n")]) == []
    with pytest.raises(KnowledgeBaseNotFoundError):
        wb.get_knowledge_base("nope")


async def test_models_metrics_and_not_found_errors(wb):
    models = {m["name"]: m for m in wb.list_models()}
    assert models["digits-mlp"]["loaded"] and models["digits-mlp"]["version"]
    out = await wb.infer("digits-mlp", {"pixels": [0.0] * 9 + [1.0] + [0.0] * 54})
    assert int(out["logits"].argmax()) == 9
    assert not wb.ready  # by default every catalogue entry must be loaded, and the built-in MiniLM is not
    assert wb.load_models(["digits-mlp"]) and wb.ready  # readiness = the models asked for are loaded
    text = wb.metrics_text().decode()
    version = models["digits-mlp"]["version"][:12]  # the short version, as /v2/models/{m} reports it
    assert f'workbench_model_requests_total{{model="digits-mlp",version="{version}"}}' in text
    with pytest.raises(ModelNotFoundError):
        wb.get_model("nope")
    with pytest.raises(PipelineNotFoundError):
        wb.get_pipeline("nope")
    with pytest.raises(RunNotFoundError):
        wb.get_run("0000-nope")
    assert wb.unload_model("digits-mlp") is True and wb.unload_model("digits-mlp") is False
