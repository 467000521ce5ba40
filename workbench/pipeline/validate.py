"""Validation before running: the graph (acyclic, connected, typed edges) and every reference
(knowledge bases, models and their signatures, templates carried on edges, names used in
expressions, the input and output schemas). Every issue names the node and the field.
"""

from __future__ import annotations

import ast
from typing import Any

import networkx as nx

from ..names import InvalidNameError, check_name
from .catalog import ModelCatalog
from .errors import Issue, KnowledgeBaseError, NotFoundError, PipelineValidationError
from .expressions import FUNCTIONS, compile_expression
from .knowledge import KnowledgeBaseLibrary
from .spec import FACT_FUNCTIONS, KB_NODE_TYPES, MODEL_FUNCTIONS, Node, Pipeline

# template name -> slot names (None: an ordered fact / unknown slots)
Templates = dict[str, "set[str] | None"]


def validate(
    pipeline: Pipeline,
    library: KnowledgeBaseLibrary,
    catalog: ModelCatalog,
    *,
    base_dir: str | None = None,
    load_models: bool = False,
) -> list[Issue]:
    """All issues of `pipeline` (empty when it is valid).

    Args:
        load_models: load catalogue models to check `inputs`/`facts` against their signatures
            (models already loaded are always checked).
    """
    named = _name_issues(pipeline)
    issues = pipeline.check_structure()
    if issues:
        return named + issues
    issues = named + _check_graph(pipeline)
    kbs: dict[str, Any] = {}
    for n in pipeline.nodes.values():
        if n.type in KB_NODE_TYPES:
            try:
                kbs[n.id] = library.load(n.knowledge_bases, base_dir)
            except NotFoundError as exc:
                issues.append(pipeline.issue(n.id, "knowledge_base", str(exc)))
            except KnowledgeBaseError as exc:
                for d in exc.diagnostics[:10]:
                    issues.append(pipeline.issue(n.id, "knowledge_base", f"{d}"))
        if n.type == "generate":
            issues += _check_generate(pipeline, n, library, catalog, base_dir)
        if n.type == "model":
            issues += _check_model(
                pipeline,
                n,
                catalog,
                load_models,
                nx.ancestors(pipeline.graph, n.id) if not _has_cycle(pipeline) else set(),
            )
    if any(i.field == "edges" and "cycle" in i.message for i in issues):
        return issues
    produced = _produced_templates(pipeline, kbs)
    issues += _check_edge_templates(pipeline, kbs, produced)
    issues += _check_expressions(pipeline, produced)
    for n in pipeline.nodes_of("gate"):
        kb = kbs.get(n.id)
        t = n.decision["template"]
        if kb is not None and t not in kb.templates and not any(t in r.asserts for r in kb.rules.values()):
            issues.append(
                pipeline.issue(
                    n.id,
                    "decision.template",
                    f"knowledge base {kb.name!r} never asserts a {t!r} fact (no such template or rule)",
                )
            )
        if kb is not None and t in kb.templates and n.decision["slot"] not in kb.templates[t].slots:
            issues.append(
                pipeline.issue(
                    n.id,
                    "decision.slot",
                    f"template {t!r} has no slot {n.decision['slot']!r}; slots: {', '.join(kb.templates[t].slots)}",
                )
            )
        whens = {e.when for e in pipeline.outgoing(n.id) if e.when is not None}
        if not whens:
            issues.append(pipeline.issue(n.id, "edges", "a gate needs at least one outgoing edge with 'when: BRANCH'"))
    return issues


def check(pipeline: Pipeline, library: KnowledgeBaseLibrary, catalog: ModelCatalog, **kwargs: Any) -> None:
    """Raise PipelineValidationError when `validate` finds issues."""
    issues = validate(pipeline, library, catalog, **kwargs)
    if issues:
        raise PipelineValidationError(issues)


# -- graph --------------------------------------------------------------------------------------


def _check_graph(p: Pipeline) -> list[Issue]:
    out: list[Issue] = []
    g = p.graph
    if not p.nodes_of("input"):
        out.append(p.issue(None, "nodes", "a pipeline needs an input node"))
    if not p.nodes_of("output"):
        out.append(p.issue(None, "nodes", "a pipeline needs an output node"))
    try:
        cycle = nx.find_cycle(g)
        path = " -> ".join([a for a, _ in cycle] + [cycle[-1][1]])
        out.append(p.issue(cycle[0][0], "edges", f"the graph has a cycle: {path}"))
    except nx.NetworkXNoCycle:
        pass
    if len(g) > 1 and not nx.is_weakly_connected(g):
        comps = sorted(nx.weakly_connected_components(g), key=len, reverse=True)
        for comp in comps[1:]:
            for nid in sorted(comp):
                out.append(p.issue(nid, "edges", "not connected to the rest of the pipeline"))
    for n in p.nodes.values():
        ins = p.incoming(n.id)
        if n.type == "input" and ins:
            out.append(
                p.issue(n.id, "edges", f"an input node has no incoming edges (from {', '.join(e.source for e in ins)})")
            )
        if n.type != "input" and not ins and len(g) > 1:
            out.append(p.issue(n.id, "edges", "no incoming edge: the node can never run"))
        if n.type == "output" and p.outgoing(n.id):
            out.append(p.issue(n.id, "edges", "an output node has no outgoing edges"))
    seen: dict[tuple[str, str], int] = {}
    for i, e in enumerate(p.edges):
        if (e.source, e.target) in seen:
            out.append(p.issue(None, f"edges[{i}]", f"duplicate edge {e.source} -> {e.target}", ("edges", i)))
        seen[(e.source, e.target)] = i
    return out


# -- models -------------------------------------------------------------------------------------


def _name_issues(pipeline: Pipeline) -> list[Issue]:
    """The name rule that a YAML document is held to when parsed, for a pipeline built in code."""
    try:
        check_name(pipeline.name, "pipeline")
    except InvalidNameError as exc:
        return [pipeline.issue(None, "name", str(exc), ("name",))]
    return []


def _has_cycle(p: Pipeline) -> bool:
    return not nx.is_directed_acyclic_graph(p.graph)


def _check_generate(
    p: Pipeline, n: Node, library: KnowledgeBaseLibrary, catalog: ModelCatalog, base_dir: str | None
) -> list[Issue]:
    """A generate node's model is a causal LM of the catalogue; its rails knowledge base loads."""
    out: list[Issue] = []
    name = n.get("model")
    if not catalog.known(name):
        known = ", ".join(catalog.names()) or "(none)"
        out.append(p.issue(n.id, "model", f"no model named {name!r} in the catalogue; known: {known}"))
    else:
        spec = catalog.specs().get(name)
        task = spec.task if spec is not None else getattr(catalog.loaded.get(name), "task", None)
        if task != "causal-lm":
            out.append(p.issue(n.id, "model", f"model {name!r} is not a causal LM (task {task!r})"))
    rails = n.get("rails")
    if isinstance(rails, dict) and isinstance(rails.get("knowledge_base"), str):
        try:
            library.load([rails["knowledge_base"]], base_dir)
        except NotFoundError as exc:
            out.append(p.issue(n.id, "rails.knowledge_base", str(exc)))
        except KnowledgeBaseError as exc:
            for d in exc.diagnostics[:10]:
                out.append(p.issue(n.id, "rails.knowledge_base", f"{d}"))
    return out


def _check_model(p: Pipeline, n: Node, catalog: ModelCatalog, load: bool, ancestors: set[str]) -> list[Issue]:
    name = n.get("model")
    if not catalog.known(name):
        return [
            p.issue(
                n.id,
                "model",
                f"no model named {name!r} in the catalogue; known: {', '.join(catalog.names()) or '(none)'}",
            )
        ]
    if not (catalog.is_loaded(name) or load) or catalog.unloaded(name):  # validating never loads it again
        return []
    try:
        entry = catalog.get(name)
    except Exception as exc:
        return [p.issue(n.id, "model", f"model {name!r} cannot be loaded: {exc}")]
    out: list[Issue] = []
    sig = getattr(entry, "signature", None)
    from .nodes.model import is_tensor_model

    if sig is not None and is_tensor_model(entry):
        for k in n.get("inputs", {}):
            if k not in sig.input_names:
                out.append(
                    p.issue(
                        n.id, f"inputs.{k}", f"model {name!r} has no input {k!r}; inputs: {', '.join(sig.input_names)}"
                    )
                )
        for k in sig.input_names:
            if k not in n.get("inputs", {}):
                out.append(p.issue(n.id, "inputs", f"model input {k!r} ({sig.input(k).describe()}) is not given"))
    elif len(n.get("inputs", {})) != 1:
        out.append(p.issue(n.id, "inputs", f"model {name!r} takes one input (a text); give exactly one entry"))
    if sig is not None:
        known = set(sig.output_names) | {"outputs", "input", "labels", "index", "value"} | ancestors
        for i, fm in enumerate(n.get("facts") or []):
            for fld, expr in _mapping_exprs(fm):
                for nm in _free_names(expr):
                    if nm not in known:
                        out.append(
                            p.issue(
                                n.id,
                                f"facts[{i}].{fld}",
                                f"unknown name {nm!r}; model outputs: {', '.join(sig.output_names)}",
                            )
                        )
    return out


def _mapping_exprs(fm: dict[str, Any]) -> list[tuple[str, Any]]:
    exprs = [(f"slots.{k}", v) for k, v in (fm.get("slots") or {}).items()]
    exprs += [(f"values[{j}]", v) for j, v in enumerate(fm.get("values") or [])]
    exprs += [(k, fm[k]) for k in ("foreach", "when") if k in fm]
    return exprs


def _free_names(expr: Any) -> set[str]:
    try:
        return set(compile_expression(expr, FACT_FUNCTIONS | MODEL_FUNCTIONS).names) - {
            "true",
            "false",
            "True",
            "False",
        }
    except Exception:
        return set()


# -- templates on edges ------------------------------------------------------------------------


def _mapping_templates(n: Node) -> Templates:
    out: Templates = {}
    for fm in n.get("facts") or []:
        if "values" in fm:
            out[fm["template"]] = None
        else:
            out.setdefault(fm["template"], set())
            out[fm["template"]] |= set((fm.get("slots") or {}).keys())  # type: ignore[operator]
    return out


def _kb_templates(kb: Any) -> Templates:
    out: Templates = {t: set(d.slots) for t, d in kb.templates.items()}
    for r in kb.rules.values():
        for t in r.asserts:
            out.setdefault(t, None)
    return out


def _produced_templates(p: Pipeline, kbs: dict[str, Any]) -> dict[str, Templates]:
    """Templates each node emits (with their slots), by walking the graph in topological order."""
    produced: dict[str, Templates] = {}
    for nid in nx.topological_sort(p.graph):
        n = p.nodes[nid]
        incoming: Templates = {}
        for e in p.incoming(nid):
            for t, s in produced.get(e.source, {}).items():
                incoming[t] = s if t not in incoming else incoming[t]
        if n.type in ("input", "model", "generate"):
            produced[nid] = _mapping_templates(n)
        elif n.type in ("rules", "gate", "postprocess"):
            mine = dict(incoming)
            if nid in kbs:
                mine.update(_kb_templates(kbs[nid]))
            emit = n.get("emit")
            produced[nid] = {t: s for t, s in mine.items() if not emit or t in emit}
        elif n.type == "goal":
            rel = str(n.get("goal", "(?)")).strip("() ").split()[0] if n.get("goal") else "?"
            kb = kbs.get(nid)
            produced[nid] = {rel: (set(kb.templates[rel].slots) if kb is not None and rel in kb.templates else None)}
        else:
            produced[nid] = incoming
    return produced


def _check_edge_templates(p: Pipeline, kbs: dict[str, Any], produced: dict[str, Templates]) -> list[Issue]:
    out: list[Issue] = []
    for e in p.edges:
        target = p.nodes.get(e.target)
        source = p.nodes.get(e.source)
        if (
            target is not None
            and source is not None
            and target.type in KB_NODE_TYPES
            and source.type in ("input", "model", "generate")
            and not produced.get(e.source)
        ):
            out.append(
                p.issue(
                    e.source,
                    "facts",
                    f"edge {e.source} -> {e.target}: a {target.type} node consumes facts, "
                    f"but this {source.type} node declares none (add a 'facts' mapping)",
                )
            )
        kb = kbs.get(e.target)
        if target is None or kb is None:
            continue
        for t, slots in produced.get(e.source, {}).items():
            if t in kb.templates:
                missing = sorted((slots or set()) - set(kb.templates[t].slots))
                if missing:
                    out.append(
                        p.issue(
                            e.target,
                            "knowledge_base",
                            f"edge {e.source} -> {e.target}: template {t!r} in knowledge base {kb.name!r} has no "
                            f"slot(s) {', '.join(missing)}; "
                            f"slots: {', '.join(kb.templates[t].slots)}",
                        )
                    )
            elif slots:
                out.append(
                    p.issue(
                        e.target,
                        "knowledge_base",
                        f"edge {e.source} -> {e.target}: template {t!r} (slots {', '.join(sorted(slots))}) is not "
                        f"defined in knowledge base {kb.name!r}; "
                        f"add a deftemplate or filter it upstream with 'emit'",
                    )
                )
    return out


# -- names used in expressions -----------------------------------------------------------------


def _check_expressions(p: Pipeline, produced: dict[str, Templates]) -> list[Issue]:
    out: list[Issue] = []
    g = p.graph
    input_props: set[str] | None = None
    for n in p.nodes_of("input"):
        props = (n.get("schema") or {}).get("properties")
        if isinstance(props, dict) and (n.get("schema") or {}).get("additionalProperties") is False:
            input_props = set(props)
        elif isinstance(props, dict):
            input_props = (input_props or set()) | set(props)
    for n in p.nodes.values():
        ancestors = nx.ancestors(g, n.id)
        upstream: set[str] = set()
        for a in ancestors:
            upstream |= set(produced.get(a, {}))
        scope = {"input"} | ancestors | upstream
        if n.type == "model":
            exprs = [(f"inputs.{k}", v, scope) for k, v in (n.get("inputs") or {}).items()]
        elif n.type == "generate":
            exprs = [(fld, e, scope) for fld, e in _generate_exprs(n)]
        elif n.type == "output":
            exprs = [
                (f"fields.{k}", v.get("expr") if isinstance(v, dict) else v, scope)
                for k, v in (n.get("fields") or {}).items()
            ]
        elif n.type == "input":
            exprs = [
                (
                    f"facts[{i}].{f}",
                    x,
                    {"input"} | ({"index", "value"} if "foreach" in fm and f != "foreach" else set()),
                )
                for i, fm in enumerate(n.get("facts") or [])
                for f, x in _mapping_exprs(fm)
            ]
        else:
            continue
        for fld, expr, scope in exprs:
            try:
                c = compile_expression(expr, FACT_FUNCTIONS | MODEL_FUNCTIONS)
            except Exception:
                continue
            for nm in sorted(c.names - scope - {"true", "false", "True", "False"}):
                out.append(
                    p.issue(
                        n.id,
                        fld,
                        f"unknown name {nm!r}: not 'input', an upstream node or a template produced upstream "
                        f"(known: {', '.join(sorted(scope))})",
                    )
                )
            if input_props is not None:
                for attr in _input_attrs(c.tree):
                    if attr not in input_props:
                        out.append(
                            p.issue(
                                n.id,
                                fld,
                                f"input field {attr!r} is not in the input schema (properties: "
                                f"{', '.join(sorted(input_props))})",
                            )
                        )
            if n.type == "output":
                for call in ast.walk(c.tree):
                    if (
                        isinstance(call, ast.Call)
                        and isinstance(call.func, ast.Name)
                        and call.func.id in FACT_FUNCTIONS
                    ):
                        for a in call.args:
                            if isinstance(a, ast.Constant) and isinstance(a.value, str) and a.value not in upstream:
                                out.append(p.issue(n.id, fld, f"template {a.value!r} is produced by no upstream node"))
    for n in p.nodes_of("output"):
        schema = n.get("schema") or {}
        fields = set((n.get("fields") or {}).keys())
        for req in schema.get("required", []) or []:
            if req not in fields:
                out.append(
                    p.issue(
                        n.id,
                        "schema.required",
                        f"required output {req!r} is not one of the fields ({', '.join(sorted(fields))})",
                    )
                )
        props = schema.get("properties")
        if isinstance(props, dict) and schema.get("additionalProperties") is False:
            for f in sorted(fields - set(props)):
                out.append(
                    p.issue(n.id, f"fields.{f}", "not allowed by the output schema (additionalProperties: false)")
                )
    return out


def _generate_exprs(n: Node) -> list[tuple[str, str]]:
    """(field, expression text) of a generate node: prompt / message templates' parts, sampling expressions."""
    from .spec_generate import SAMPLING_FIELDS, PromptTemplate

    templates = [("prompt", n.get("prompt"))] + [
        (f"messages[{i}].content", m.get("content")) for i, m in enumerate(n.get("messages") or [])
    ]
    out: list[tuple[str, str]] = []
    for fld, text in templates:
        if isinstance(text, str):
            try:
                parts = PromptTemplate(text, FACT_FUNCTIONS).parts
            except Exception:  # reported by the structural checks
                continue
            out += [(fld, p.text) for p in parts if not isinstance(p, str)]
    out += [(k, n.get(k)) for k in SAMPLING_FIELDS if isinstance(n.get(k), str)]
    return out


def _input_attrs(tree: ast.AST) -> set[str]:
    return {
        n.attr
        for n in ast.walk(tree)
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "input"
    }


__all__ = ["FUNCTIONS", "check", "validate"]
