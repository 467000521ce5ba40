"""`goal` nodes: a backward-chaining query over a knowledge base, with the incoming facts as base
facts. Emits the proven goal instances as facts; the value is `{proved, answers: [{bindings, proof}]}`."""

from __future__ import annotations

from typing import Any

from chaining.backward import ProofCancelled
from neural.errors import QueueFullError

from ..context import NodeState, RunContext
from ..errors import ModelUnloadedError, NodeExecutionError, RunCancelled
from .backward import prove_sync


def run_goal(ctx: RunContext, state: NodeState, rt: Any) -> None:
    node = state.node
    kb = rt.library.load(node.knowledge_bases, ctx.base_dir)
    ctx.kb_versions[kb.name] = kb.version
    facts_in = ctx.incoming_facts(node.id)
    limit = None if node.get("all") else (node.get("max_answers") or 1)
    if node.get("all") and node.get("max_answers"):
        limit = node.get("max_answers")
    try:
        answers, facts, skipped, model_calls, _ = prove_sync(
            kb,
            node.get("goal"),
            facts_in,
            limit=limit,
            max_depth=node.get("max_depth"),
            timeout=node.get("timeout_s"),
            functions=rt.library.functions,
            catalog=rt.catalog,  # model-backed relations (;@model) ask the run's models
            cancel=ctx.cancel,  # the caller left: the proof stops, the run is not recorded
        )
    except ProofCancelled as exc:
        raise RunCancelled(node.id, str(exc)) from exc
    except (NodeExecutionError, QueueFullError):  # back-pressure passes through unchanged, as for model nodes
        raise
    except ModelUnloadedError as exc:  # refused, as a model node needing it is (nothing recorded)
        raise exc.in_node(ctx.pipeline.name, node.id) from None
    except Exception as exc:
        raise NodeExecutionError(node.id, node.type, f"goal {node.get('goal')}: {type(exc).__name__}: {exc}") from exc
    for call in model_calls:  # the run records which model versions answered its model-backed relations
        ctx.model_versions[call["model"]] = call["version"]
    emit = node.get("emit")
    state.facts = [f for f in facts if not emit or f.template in emit]
    state.value = {"proved": bool(answers), "answers": answers}
    state.record = {
        "proof": {
            "goal": node.get("goal"),
            "knowledge_base": kb.name,
            "proved": bool(answers),
            "answers": answers,
            "skipped_rules": skipped,
            "model_calls": model_calls,
        }
    }
    ctx.event("proof", node.id, state.record["proof"])
