"""Known truth for the inter-bias statistics: two generators.

:func:`simulate_interbias` draws a whole evaluation -- interactions, a protected
attribute and a recommender's top-``L`` lists -- whose per-group metrics are known in
closed form (:func:`planted_truth`), :func:`simulate_lists` more recommenders' lists
for the same data, and :func:`popularity_figures` computes the popularity figures of
the same data from the public definitions only: together they judge
:func:`recaudit.fairness.evaluate` (``benchmarks/validate_fairness.py``) and
:func:`recaudit.fairness.compare_models` (``benchmarks/validate_fairness_compare.py``).
:func:`interaction_model` / :func:`draw_interactions` draw interaction data with a
planted group structure for *trained* models, whose oracle lists
(:func:`oracle_lists`) and truth (:func:`oracle_truth`) judge the study's masking
(docs/fairness-masking.md). Nothing here imports the study runner.
"""

from ._interactions import (
    InteractionModel,
    OracleTruth,
    SyntheticInteractions,
    draw_interactions,
    interaction_model,
    ndcg_per_user,
    oracle_lists,
    oracle_truth,
)
from ._lists import (
    PROFILE_NAMES,
    SyntheticData,
    planted_truth,
    popularity_figures,
    simulate_interbias,
    simulate_lists,
    zipf_exponent,
)

__all__ = [
    "PROFILE_NAMES",
    "InteractionModel",
    "OracleTruth",
    "SyntheticData",
    "SyntheticInteractions",
    "draw_interactions",
    "interaction_model",
    "ndcg_per_user",
    "oracle_lists",
    "oracle_truth",
    "planted_truth",
    "popularity_figures",
    "simulate_interbias",
    "simulate_lists",
    "zipf_exponent",
]
