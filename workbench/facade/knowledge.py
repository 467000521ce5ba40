"""Knowledge bases of the `Workbench` facade: list, load, upload, forward and backward chaining."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


class KnowledgeMixin:
    """Knowledge bases: the library folder, forward chaining, backward chaining (goals)."""

    def list_knowledge_bases(self) -> list[dict[str, Any]]:
        """`[{"name", "version", "templates", "rules", ..., "files"}]`; a file that does not validate
        is listed with `"errors": [diagnostics]`."""
        out = []
        for name in self.library.names():
            try:
                out.append(self.library.describe(self.library.load(name)))
            except Exception as exc:
                errors = [self.library.relative_text(str(d)) for d in getattr(exc, "diagnostics", [exc])]
                out.append({"name": name, "errors": errors})
        return out

    def get_knowledge_base(self, name: str) -> Any:
        """The validated `rules.KnowledgeBase` (`.name .version .sources .templates .rules`).

        Raises KnowledgeBaseNotFoundError, KnowledgeBaseError."""
        return self.library.load(name)

    def upload_knowledge_base(self, name: str, text: str) -> Any:
        """Validate rule text and write it as `knowledge_bases/NAME.clp`; records the version in the store.

        Raises KnowledgeBaseError with `file:line:col` diagnostics (nothing is written)."""
        kb, path = self.library.save(name, text)
        self.store.save_knowledge_base(kb.name, kb.version, kb.sources)
        return kb

    def run_knowledge_base(
        self,
        name: str,
        facts: Iterable[Any] | None = None,
        *,
        strategy: str | None = None,
        max_firings: int | None = None,
        timeout: float | None = None,
        cancel: Any = None,
    ) -> Any:
        """Forward chaining: reset, assert `facts` (`Fact`s or `{"template", "slots"|"values"}`), run.
        `cancel`: a `chaining.forward.Cancellation`; its `cancel()` from another thread halts the run.

        Returns `chaining.forward.ForwardResult` (`.to_dict()` for JSON). Raises KnowledgeBaseNotFoundError,
        KnowledgeBaseError, rules.facts.FactError, chaining.forward.ForwardError (EvaluationCancelled when
        cancelled)."""
        kb = self.library.load(name)
        with self.library.lease(kb) as engine:
            return engine.evaluate(facts, strategy=strategy, max_firings=max_firings, timeout=timeout, cancel=cancel)

    def ask(
        self,
        name: str,
        goal: str,
        facts: Iterable[Any] | None = None,
        *,
        all: bool = False,
        max_answers: int | None = None,
        max_depth: int | None = None,
        timeout: float | None = None,
        provider: Any = None,
        models: Any = None,
        cancel: Any = None,
    ) -> dict[str, Any]:
        """Blocking `ask_async` (scripts, threads, Textual workers; from a coroutine await `ask_async`)."""
        return self._sync(
            self.ask_async(
                name,
                goal,
                facts,
                all=all,
                max_answers=max_answers,
                max_depth=max_depth,
                timeout=timeout,
                provider=provider,
                models=models,
                cancel=cancel,
            )
        )

    async def ask_async(
        self,
        name: str,
        goal: str,
        facts: Iterable[Any] | None = None,
        *,
        all: bool = False,
        max_answers: int | None = None,
        max_depth: int | None = None,
        timeout: float | None = None,
        provider: Any = None,
        models: Any = None,
        cancel: Any = None,
    ) -> dict[str, Any]:
        """Backward chaining: prove `goal` (e.g. `"(ancestor ?x otto)"`) over knowledge base `name`.

        Args:
            facts: working-memory facts (`Fact`s or `{"template", "slots"|"values"}`).
            all: every answer (default: the first; `max_answers` caps either).
            provider: answers askable facts (`chaining.backward.PersonProvider`, `ScriptedProvider`, ...);
                the relations a `;@model` annotation backs are answered by that catalogue model instead.
            models: the `workbench.backward_models.CatalogModels` answering those (default: a new one
                over this workbench's catalogue); pass one to share its answers across proofs.
            cancel: a `chaining.forward.Cancellation`; its `cancel()` from any thread stops the proof
                (checked between resolution steps; a CLIPS evaluation in progress is halted).
        Returns:
            `{"proved", "answers": [{"bindings", "fact", "certainty", "proof"}],
            "skipped_rules": [{"rule", "reason"}], "model_calls": [{"model", "version", "batch"}],
            "warnings": [str]}` (warnings: premises that could not be evaluated; askable facts not asked, no
            provider: unknown, so a `proved: false` can be told from "never asked").
        Raises:
            KnowledgeBaseNotFoundError, KnowledgeBaseError, chaining.backward.BackwardError (GoalSyntaxError,
            also for a goal over a relation that no rule, fact, template, askable or given fact defines:
            `goal:1:COL: the goal uses relation R, which ...`, as `workbench kb ask`; ProofTimeout,
            ProofCancelled, ...).
        """
        from chaining.backward import GoalSyntaxError, parse_goal
        from chaining.backward.check import unknown_in_goal
        from chaining.forward import as_facts
        from workbench.pipeline.nodes.backward import prove

        kb = self.library.load(name)
        given = as_facts(facts)
        unknown = unknown_in_goal(kb, parse_goal(goal, kb), {f.template for f in given})
        if unknown:  # as `workbench kb ask` and Prolog's unknown procedure: an error, not "no"
            raise GoalSyntaxError("; ".join(str(u) for u in unknown))
        limit = max_answers if all else (max_answers or 1)
        answers, _, skipped, model_calls, warnings = await prove(
            kb,
            goal,
            given,
            limit=limit,
            max_depth=max_depth,
            timeout=timeout,
            functions=self.library.functions,
            provider=provider,
            catalog=self.catalog,  # model-backed relations (;@model) are answered by the catalogue's models
            models=models,
            cancel=cancel,
        )
        return {
            "proved": bool(answers),
            "answers": answers,
            "skipped_rules": skipped,
            "model_calls": model_calls,
            "warnings": warnings,
        }

    def check_knowledge_base(
        self, sources: list[tuple[str, str]], *, warnings: bool = False, tables: list[str] | tuple[str, ...] = ()
    ) -> list[Any]:
        """Located diagnostics (`rules.Diagnostic`: file, line, column, message, severity) for unsaved rule
        text given as `[(filename, text), ...]` in load order; empty when it validates and real CLIPS loads it
        (a throw-away environment, `chaining.forward.load_check`). Never raises on bad text.

        With `warnings`, the checks of `workbench kb check`: also what CLIPS loads past (a construct
        redefined, ...) and premises over relations nothing defines (severity "warning"), and the
        `;@model` annotations against the model catalogue (errors). `tables`: the file names whose text
        is a decision table's CSV (checked as its generated rules, located as `file.csv:ROW:COL`)."""
        import rules

        kw: dict[str, Any] = {"allow_unsafe": self.library.allow_unsafe, "functions": self.library.functions}
        found = rules.check_sources(list(sources), warnings=warnings, tables=tables, **kw)
        if any(d.severity == "error" for d in found):
            return found
        from chaining.forward.load_check import clips_refusals

        loaded = rules.knowledge_base.table_sources(list(sources), tables)[0] if tables else list(sources)
        refused = clips_refusals(loaded, **kw)  # what CLIPS refuses at load and the validator missed
        if refused or not warnings:
            return refused + found
        from chaining.backward.check import unknown_premises
        from workbench.backward_models import check_bindings

        kb = rules.knowledge_base_from_sources("check", loaded, **kw)
        if any(spec.model is not None for spec in kb.askable_specs.values()):
            found += check_bindings(kb, self.catalog)
        unknown = [rules.Diagnostic(u.file, u.line, u.column, u.message, "warning") for u in unknown_premises(kb)]
        return found + unknown
