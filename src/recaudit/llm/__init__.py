"""recaudit.llm: the system under test.

Catalog -> queries -> embedding retrieval (top-k) -> prompt (candidates in a given
order) -> backend -> strict parsing to a prompt position, plus permutation designs.
"""

from ._catalog import CANONICAL_COLUMNS, Catalog, ColumnMap, load_catalog
from ._designs import (
    Design,
    cyclic_orders,
    design_orders,
    exhaustive_orders,
    identity_orders,
    sampled_orders,
    shared_orders,
    williams_orders,
)
from ._parse import DISCARD_REASONS, ParsedAnswer, parse_answer
from ._prompt import PromptTemplate, positional_identifiers, random_labels, render_request
from ._queries import Query, QueryTemplate, generate_queries, load_queries, query_templates
from ._retrieval import (
    Retriever,
    cache_root,
    candidates_from_frame,
    candidates_to_frame,
    default_cache_dir,
)
from ._types import Backend, Candidate, ChatMessage, ChatRequest, ChatResponse
from .backends import LocalBackend

# isort: split
# -- runner, journal, config, backends (llm-runner) --------------------------------
from ._audit import (
    AuditInterrupted,
    AuditResult,
    answer_schema,
    build_backends,
    build_tasks,
    run_audit,
)
from ._config import (
    AuditConfig,
    CatalogConfig,
    DesignConfig,
    LocalParams,
    ModelConfig,
    OpenAIParams,
    PromptConfig,
    QueriesConfig,
    RetrievalConfig,
    SimulatedParams,
    config_hash,
    config_to_dict,
    load_config,
    parse_config,
)
from ._journal import (
    EVALUATION_COLUMNS,
    EvalKey,
    EvalRecord,
    Journal,
    MemorySink,
    ResultSink,
    unescape_row,
)
from ._runner import EvalTask, RunProgress, RunSummary, run_tasks
from .backends._openai import OpenAIBackend, choice_probabilities_from_logprobs
from .backends._simulated import SimulatedBackend, SimulationProfile

# isort: split
# -- the study driver (positional-study) --------------------------------------------
# -- mitigation wrappers and top-N answers (mitigation) -----------------------------
from ._mitigation import (
    CalibratedBackend,
    CanonicalOrderBackend,
    OrderEnsembleBackend,
    PositionPrior,
    PromptContext,
    estimate_position_prior,
)
from ._ranking import collect_rankings, parse_ranking, ranking_from_choice_probs, ranking_template
from ._study import StudyRun, run_study

__all__ = [
    "CANONICAL_COLUMNS",
    "DISCARD_REASONS",
    "Backend",
    "Candidate",
    "Catalog",
    "ChatMessage",
    "ChatRequest",
    "ChatResponse",
    "ColumnMap",
    "Design",
    "LocalBackend",
    "ParsedAnswer",
    "PromptTemplate",
    "Query",
    "QueryTemplate",
    "Retriever",
    "cache_root",
    "candidates_from_frame",
    "candidates_to_frame",
    "cyclic_orders",
    "default_cache_dir",
    "design_orders",
    "exhaustive_orders",
    "generate_queries",
    "identity_orders",
    "load_catalog",
    "load_queries",
    "parse_answer",
    "positional_identifiers",
    "query_templates",
    "random_labels",
    "render_request",
    "sampled_orders",
    "shared_orders",
    "williams_orders",
    # llm-runner
    "AuditConfig",
    "AuditInterrupted",
    "AuditResult",
    "CatalogConfig",
    "DesignConfig",
    "EVALUATION_COLUMNS",
    "EvalKey",
    "EvalRecord",
    "EvalTask",
    "Journal",
    "LocalParams",
    "MemorySink",
    "ModelConfig",
    "OpenAIBackend",
    "OpenAIParams",
    "PromptConfig",
    "QueriesConfig",
    "ResultSink",
    "RetrievalConfig",
    "RunProgress",
    "RunSummary",
    "SimulatedBackend",
    "SimulatedParams",
    "SimulationProfile",
    "answer_schema",
    "build_backends",
    "build_tasks",
    "choice_probabilities_from_logprobs",
    "config_hash",
    "config_to_dict",
    "load_config",
    "parse_config",
    "run_audit",
    "run_tasks",
    "unescape_row",
    # positional-study
    "StudyRun",
    "run_study",
    # mitigation
    "CalibratedBackend",
    "CanonicalOrderBackend",
    "OrderEnsembleBackend",
    "PositionPrior",
    "PromptContext",
    "collect_rankings",
    "estimate_position_prior",
    "parse_ranking",
    "ranking_from_choice_probs",
    "ranking_template",
]
