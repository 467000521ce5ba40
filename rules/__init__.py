"""rules: the CLIPS rule language — parser (lark), AST with source positions, validation,
safety checks and knowledge-base loading. Imports nothing else of ours; never executes rules.

Public API:
    parse(text, filename="<string>") -> ast.Module               raises RuleSyntaxError
    check_files(paths, *, allow_unsafe=False, functions=(), warnings=False, strict=False) -> list[Diagnostic]
                                                                   never raises on bad text
    load_knowledge_base(paths, *, name=None, allow_unsafe=False, functions=(), strict=False) -> KnowledgeBase
                                                                   kb.warnings: what CLIPS reports but loads past
    knowledge_base_from_text(name, text, *, allow_unsafe=False, functions=()) -> KnowledgeBase
    to_clips(node) -> str                                          AST back to CLIPS text
    Diagnostic, RuleError, RuleSyntaxError, RuleValidationError, UnsafeConstructError
    Fact, Symbol, String, facts_from_json                          (rules.facts)
"""

from . import ast
from .annotations import AskableSpec, ModelBinding
from .ast import (
    And,
    Atom,
    Call,
    Exists,
    FactsDef,
    FieldConstraint,
    Forall,
    FunctionDef,
    GlobalDef,
    Logical,
    Module,
    ModuleDef,
    Not,
    OpaqueConstruct,
    Or,
    Pattern,
    RuleDef,
    SlotConstraint,
    SlotDef,
    TemplateDef,
    Term,
    Test,
    Wildcard,
)
from .decision_table import is_table as is_decision_table
from .errors import Diagnostic, RuleError, RuleSyntaxError, RuleValidationError, UnsafeConstructError
from .facts import Fact, FactError, String, Symbol, facts_from_json
from .knowledge_base import (
    KnowledgeBase,
    check_files,
    check_sources,
    content_version,
    knowledge_base_from_sources,
    knowledge_base_from_text,
    load_knowledge_base,
)
from .parser import parse
from .printer import to_clips
from .safety import UNSAFE_FUNCTIONS

__all__ = [
    "ast",
    "parse",
    "check_files",
    "check_sources",
    "load_knowledge_base",
    "is_decision_table",
    "knowledge_base_from_text",
    "knowledge_base_from_sources",
    "content_version",
    "to_clips",
    "KnowledgeBase",
    "AskableSpec",
    "ModelBinding",
    "Diagnostic",
    "RuleError",
    "RuleSyntaxError",
    "RuleValidationError",
    "UnsafeConstructError",
    "UNSAFE_FUNCTIONS",
    "Fact",
    "FactError",
    "Symbol",
    "String",
    "facts_from_json",
    "Module",
    "TemplateDef",
    "SlotDef",
    "FactsDef",
    "RuleDef",
    "FunctionDef",
    "GlobalDef",
    "ModuleDef",
    "OpaqueConstruct",
    "Pattern",
    "SlotConstraint",
    "FieldConstraint",
    "Term",
    "Wildcard",
    "Test",
    "Not",
    "And",
    "Or",
    "Exists",
    "Forall",
    "Logical",
    "Atom",
    "Call",
]
