"""Workbench core: pipeline graph and executor, run store, configuration, CLI, scripting API.

from workbench import Workbench, Pipeline
"""

__version__ = "0.1.0"

__all__ = ["Pipeline", "RunResult", "Workbench", "__version__"]


def __getattr__(name: str):
    # Lazy, so that `import workbench` (the CLI, `workbench version`) stays fast and light.
    if name == "Workbench":
        from workbench.workbench import Workbench

        return Workbench
    if name == "Pipeline":
        from workbench.pipeline.spec import Pipeline

        return Pipeline
    if name == "RunResult":
        from workbench.pipeline.result import RunResult

        return RunResult
    raise AttributeError(f"module 'workbench' has no attribute {name!r}")
