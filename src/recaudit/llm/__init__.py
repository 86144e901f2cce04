"""recaudit.llm: the system under test.

Catalog -> queries -> embedding retrieval (top-k; or, on MovieLens, the user's history
as the request and item-kNN candidates: :func:`movielens_testbed`) -> prompt (candidates in a given
order) -> backend -> strict parsing to a prompt position; the backends behind one
protocol with their factory (:func:`build_backends`), the mitigation wrappers (a
mitigated model is a new system under test) and the top-N ranking prompt and parser.
Running audits (config, plan, runner, journal, executors) is :mod:`recaudit.audit`;
this package imports neither it nor the statistics.
"""

from ._catalog import CANONICAL_COLUMNS, Catalog, ColumnMap, load_catalog
from ._movielens import ItemKNNRetriever, MovieLensTestbed, movielens_testbed
from ._parse import DISCARD_REASONS, ParsedAnswer, parse_answer
from ._prompt import PromptTemplate, positional_identifiers, random_labels, render_request
from ._queries import Query, QueryTemplate, generate_queries, load_queries, query_templates
from ._retrieval import (
    CandidateSource,
    Retriever,
    cache_root,
    candidates_from_frame,
    candidates_to_frame,
    default_cache_dir,
)
from ._types import Backend, Candidate, ChatMessage, ChatRequest, ChatResponse
from .backends import LocalBackend

# isort: split
# -- the backends and their factory ----------------------------------------------------
from .backends._batching import BatchingBackend
from .backends._factory import (
    EndpointConfig,
    LocalParams,
    OpenAIParams,
    SimulatedParams,
    build_backends,
)
from .backends._openai import OpenAIBackend, choice_probabilities_from_logprobs
from .backends._simulated import SimulatedBackend, SimulationProfile

# isort: split
# -- mitigation wrappers and top-N answers (mitigation) -----------------------------
from ._mitigation import (
    CalibratedBackend,
    CanonicalOrderBackend,
    OrderEnsembleBackend,
    PositionPrior,
    PromptContext,
    estimate_position_prior,
)
from ._ranking import (
    collect_rankings,
    parse_ranking,
    ranking_from_choice_probs,
    ranking_schema,
    ranking_template,
)

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
    "CandidateSource",
    "ItemKNNRetriever",
    "LocalBackend",
    "MovieLensTestbed",
    "ParsedAnswer",
    "PromptTemplate",
    "Query",
    "QueryTemplate",
    "Retriever",
    "cache_root",
    "candidates_from_frame",
    "candidates_to_frame",
    "default_cache_dir",
    "generate_queries",
    "load_catalog",
    "load_queries",
    "movielens_testbed",
    "parse_answer",
    "positional_identifiers",
    "query_templates",
    "random_labels",
    "render_request",
    # the backends and their factory
    "BatchingBackend",
    "LocalParams",
    "EndpointConfig",
    "OpenAIBackend",
    "OpenAIParams",
    "SimulatedBackend",
    "SimulatedParams",
    "SimulationProfile",
    "build_backends",
    "choice_probabilities_from_logprobs",
    # mitigation wrappers and top-N answers
    "CalibratedBackend",
    "CanonicalOrderBackend",
    "OrderEnsembleBackend",
    "PositionPrior",
    "PromptContext",
    "collect_rankings",
    "estimate_position_prior",
    "parse_ranking",
    "ranking_from_choice_probs",
    "ranking_schema",
    "ranking_template",
]
