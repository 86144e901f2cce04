"""Models of the inter-bias study: RecBole's nine CF/GNN models and two baselines.

Importing this package does not import RecBole or torch; they are imported when a
model is trained (:class:`~recaudit.MissingExtraError` names the ``fairness`` extra
when they are missing).
"""

from ._baselines import BASELINES, most_popular, random_items
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
    "TrainedModel",
    "expand_grid",
    "most_popular",
    "random_items",
    "recbole_class",
    "recommend",
    "train_model",
    "write_atomic_split",
]
