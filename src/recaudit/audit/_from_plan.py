"""A run sized by a plan (``recaudit positional run CONFIG --plan PLAN.json``).

``recaudit positional plan --json`` prints one self-contained object per design (k,
orders per query, queries, temperatures, answers, stopping, alpha, budget). The config
says WHAT is audited (catalog, models, prompt); the chosen design says HOW MUCH: it
replaces the config's ``retrieval.k``, ``queries.n`` and ``design`` (random orders,
one sample each), asks for choice probabilities when the design is ``exact``, and
turns sequential stopping on with the plan's alpha and budget when the design is
``sequential``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from ..exceptions import ConfigError
from ..positional import DesignPlan
from ._config import AuditConfig, DesignConfig, QueriesConfig, RetrievalConfig
from ._sequential_driver import SequentialOptions

__all__ = ["apply_plan", "choose_design"]

MSG_NO_DESIGN = ("the plan has no design {name!r}; it has {names} (pass `--design` one "
                 "of them)")
MSG_NONE_ADEQUATE = ("the plan marks no design as cheapest adequate (none reached its "
                     "target power); pass `--design` one of {names}")
MSG_NO_QUERIES = "the plan's design {name!r} has no number of queries; plan it with a target power"
MSG_QUERY_FILE = ("the plan sets the number of generated queries ({n}), but the config "
                  "reads its queries from `queries.file`; use `queries.n` or drop --plan")
MSG_TEMPERATURES = ("the plan was made for {planned} temperature(s), the config has "
                    "{given} ({values}); plan with `--temperatures {given}` or edit the config")


def choose_design(plan: Sequence[Mapping[str, Any]], name: str | None) -> DesignPlan:
    """The design called ``name`` in ``plan --json``'s list, else the one marked
    cheapest adequate.

    Raises
    ------
    ConfigError
        No such design, or none marked and no name given.
    """
    designs = [DesignPlan.from_dict(d) for d in plan]
    names = [d.design for d in designs]
    if name is not None:
        found = [d for d in designs if d.design == name]
        if not found:
            raise ConfigError(MSG_NO_DESIGN.format(name=name, names=names))
        return found[0]
    cheapest = [d for d in designs if d.cheapest]
    if not cheapest:
        raise ConfigError(MSG_NONE_ADEQUATE.format(names=names))
    return cheapest[0]


def apply_plan(cfg: AuditConfig, design: DesignPlan
               ) -> tuple[AuditConfig, SequentialOptions | None]:
    """``cfg`` sized by ``design``, and the sequential options it asks for (or None).

    Raises
    ------
    ConfigError
        The design has no query count, the config reads a query file, or its number of
        temperatures is not the plan's.
    """
    if design.queries is None:
        raise ConfigError(MSG_NO_QUERIES.format(name=design.design))
    if cfg.queries.n is None:
        raise ConfigError(MSG_QUERY_FILE.format(n=design.queries))
    if len(cfg.temperatures) != design.temperatures:
        raise ConfigError(MSG_TEMPERATURES.format(
            planned=design.temperatures, given=len(cfg.temperatures),
            values=", ".join(map(str, cfg.temperatures))))
    sized = replace(
        cfg,
        queries=QueriesConfig(n=design.queries),
        retrieval=RetrievalConfig(k=(design.k,), model=cfg.retrieval.model,
                                  cache_dir=cfg.retrieval.cache_dir),
        design=DesignConfig(kind="sampled", n_perms=design.orders, samples_per_order=1),
        prompt=replace(cfg.prompt, choice_probabilities=cfg.prompt.choice_probabilities
                       or design.design.startswith("exact")),
    )
    sequential = None
    if "sequential" in design.design:
        sequential = SequentialOptions(
            alpha=design.alpha,
            max_evaluations=design.max_evaluations or design.queries * design.orders)
    return sized, sequential
