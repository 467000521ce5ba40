"""Messages the screens post so that tests (and other screens) can observe what happened."""

from __future__ import annotations

from typing import Any

from textual.message import Message


class PipelineSaved(Message):
    """A pipeline document was stored as `version` (created is False when it was already stored)."""

    def __init__(self, name: str, version: str, created: bool) -> None:
        super().__init__()
        self.name, self.version, self.created = name, version, created


class KnowledgeBaseChecked(Message):
    """A rule file was checked (on save or on request); `diagnostics` is [] when clean."""

    def __init__(self, path: str, diagnostics: list[dict[str, Any]], saved: bool) -> None:
        super().__init__()
        self.path, self.diagnostics, self.saved = path, diagnostics, saved


class ScenariosRan(Message):
    """A scenario file ran (Rules screen); `report` is the `workbench kb test --json` document."""

    def __init__(self, path: str, report: dict[str, Any]) -> None:
        super().__init__()
        self.path, self.report = path, report


class KnowledgeBaseRan(Message):
    """A knowledge base ran forward on facts; `result` has output, firings and final facts."""

    def __init__(self, name: str, result: dict[str, Any]) -> None:
        super().__init__()
        self.name, self.result = name, result


class RunFinished(Message):
    """A pipeline run finished (successfully or not); `result` is the backend's run record."""

    def __init__(self, result: dict[str, Any]) -> None:
        super().__init__()
        self.result = result


class ConsultationFinished(Message):
    """A backward-chaining consultation ended with `result` (answers and proofs)."""

    def __init__(self, result: dict[str, Any]) -> None:
        super().__init__()
        self.result = result


class RunReplayed(Message):
    """A recorded run was replayed; `result` has the new run and the changes."""

    def __init__(self, run_id: str, result: dict[str, Any]) -> None:
        super().__init__()
        self.run_id, self.result = run_id, result
