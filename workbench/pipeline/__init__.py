"""Pipelines: graphs of typed nodes (input, model, rules, goal, gate, postprocess, explain, output)
that join rules and models; YAML documents versioned by content hash; validation; an asyncio
executor with provenance; the result cache. See docs/pipelines.md."""

from .errors import (
    InputValidationError,
    Issue,
    KnowledgeBaseError,
    KnowledgeBaseNotFoundError,
    ModelInputError,
    ModelNotFoundError,
    ModelUnloadedError,
    NodeExecutionError,
    NotFoundError,
    PipelineNotFoundError,
    PipelineValidationError,
    RunFailedError,
    RunNotFoundError,
    WorkbenchError,
)
from .spec import KB_NODE_TYPES, NODE_TYPES, Edge, Node, Pipeline

__all__ = [
    "Edge",
    "InputValidationError",
    "Issue",
    "KB_NODE_TYPES",
    "KnowledgeBaseError",
    "KnowledgeBaseNotFoundError",
    "ModelInputError",
    "ModelNotFoundError",
    "ModelUnloadedError",
    "NODE_TYPES",
    "Node",
    "NodeExecutionError",
    "NotFoundError",
    "Pipeline",
    "PipelineNotFoundError",
    "PipelineValidationError",
    "RunFailedError",
    "RunNotFoundError",
    "WorkbenchError",
]
