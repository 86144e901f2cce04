"""Models of the inter-bias study: RecBole's nine CF/GNN models and two baselines.

Importing this package does not import RecBole or torch; they are imported when a
model is trained (:class:`~recaudit.MissingExtraError` names the ``fairness`` extra
when they are missing). Under a sampled protocol the lists are ranked within each
user's candidates: :func:`recommend_candidates` (a trained model, or one read back by
:func:`load_model`), :func:`most_popular_candidates` and :func:`random_candidates`.
"""

from ._baselines import (
    BASELINES,
    most_popular,
    most_popular_candidates,
    random_candidates,
    random_items,
)
from ._candidates import LoadedModel, load_model, recommend_candidates
from ._recbole import (
    MODELS,
    GridPoint,
    TrainedModel,
    expand_grid,
    recbole_class,
    recommend,
    train_model,
    write_atomic_split,
)

__all__ = [
    "BASELINES",
    "MODELS",
    "GridPoint",
    "LoadedModel",
    "TrainedModel",
    "expand_grid",
    "load_model",
    "most_popular",
    "most_popular_candidates",
    "random_candidates",
    "random_items",
    "recbole_class",
    "recommend",
    "recommend_candidates",
    "train_model",
    "write_atomic_split",
]
