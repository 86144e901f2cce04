"""recaudit: audit recommender systems for bias with real statistics.

Two studies:

- :mod:`recaudit.positional` -- positional bias of top-1 LLM recommenders
  (POB-ICM, POB-UNBP, PS, PB, sPB, the simulation study);
- :mod:`recaudit.fairness` -- inter-bias of CF/GNN recommenders (per-group top-N
  metrics, item coverage, RD, NRD, IB), with user-level uncertainty.

:mod:`recaudit.llm` holds the system under test (catalog, retrieval, prompt,
parsing, backends), :mod:`recaudit.audit` runs it (config, plan, runner, journal,
executors) and :mod:`recaudit.report` renders the HTML report.
"""

from __future__ import annotations

from ._stats import ConfidenceInterval, Estimate
from .exceptions import (
    ConfigError,
    EndpointError,
    InputError,
    JournalError,
    MissingExtraError,
    RecauditError,
    RecauditWarning,
)

__version__ = "0.1.0"

__all__ = [
    "ConfidenceInterval",
    "ConfigError",
    "EndpointError",
    "Estimate",
    "InputError",
    "JournalError",
    "MissingExtraError",
    "RecauditError",
    "RecauditWarning",
    "__version__",
]
