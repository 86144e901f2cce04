"""The plan of a positional audit: every design sized and priced for its effect (one
effect, or a pilot's two: its answers' for the sampled designs, its vectors' for the
exact ones), and the effect estimated from a pilot run's evaluations
(:mod:`._planning` holds the formulas and simulations; docs/planning.md the guide)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from .._records import as_mapping, need, number, optional_number
from .._stats import as_generator
from ..exceptions import InputError
from ._crossfit import crossfit_shares, pb_from_shares
from ._evaluations import evaluations_from_table
from ._exact import exact_evaluations_from_table
from ._planning import (
    DESIGNS,
    MAX_SEQUENTIAL_EVALUATIONS,
    MSG_ALPHA,
    MSG_DESIGN,
    MSG_INT,
    MSG_POWER,
    SEQUENTIAL_HORIZON,
    CallCost,
    Effect,
    fixed_power,
    fixed_power_method,
    fixed_power_se,
    fixed_queries,
    pb_half_width,
    queries_for_half_width,
    sequential_stopping_times,
)
from ._unbp import query_position_shares

__all__ = ["AuditPlan", "DesignPlan", "effect_from_evaluations", "plan_audit"]

NOTE_SEQUENTIAL_CI = "no fixed-sample CI after a sequential stop (descriptive only)"
NOTE_NO_EFFECT = "no effect to detect: no number of queries reaches the target power"
NOTE_WIDTH_SEQUENTIAL = ("a CI width is a fixed-sample target: plan it with a fixed design "
                         "(`run --sequential --ci-width` stops a cell once PB's CI is that "
                         "narrow, at about the fixed design's size)")
NOTE_WIDTH_HORIZON = "PB's half-width does not reach the target within the simulated horizon"
MSG_HALF_WIDTH = ("`half_width` must be a number in (0, 0.5] (PB's CI half-width to plan "
                  "for) and comes instead of `queries`, got {value!r}")
NOTE_HORIZON = ("the target power is not reached within {n} queries "
                "(the simulated horizon); plan the fixed design")
MSG_EXACT_K = "`exact_effect` must have the effect's k = {k}, got k = {exact}"


# -- the plan ----------------------------------------------------------------------


@dataclass(frozen=True)
class DesignPlan:
    """One design, sized and priced. ``queries`` per cell; ``calls`` and the spend
    over all ``temperatures`` cells (a sequential design's *expected* calls, its
    budget ``calls_max``). ``power_se`` and ``pb_half_width_se`` are Monte-Carlo
    standard errors (``None`` where not simulated: the normal approximation).
    ``effect`` is the effect the design was planned with (``None``: not recorded, a
    design read from a plan written before designs carried it)."""

    design: str
    k: int
    orders: int
    temperatures: int
    alpha: float
    alpha_per_cell: float
    queries: int | None
    power: float | None
    power_se: float | None
    power_method: str
    calls: float | None
    calls_max: int | None
    max_evaluations: int | None
    pb_half_width: float | None = None
    pb_half_width_se: float | None = None
    prompt_tokens: float | None = None
    completion_tokens: float | None = None
    wall_s: float | None = None
    money: float | None = None
    adequate: bool = False
    cheapest: bool = False
    note: str = ""
    effect: Effect | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready; with ``answers`` and ``stopping``, what a run needs."""
        answers, stopping = DESIGNS[self.design]
        return {**asdict(self), "effect": None if self.effect is None else self.effect.to_dict(),
                "answers": answers, "stopping": stopping}

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> DesignPlan:
        """Read :meth:`to_dict` back."""
        what = "DesignPlan"
        obj = as_mapping(obj, what)
        if need(obj, "design", what) not in DESIGNS:
            raise InputError(MSG_DESIGN.format(choices=tuple(DESIGNS), value=obj["design"]))

        def opt_int(name: str) -> int | None:
            value = optional_number(obj, name, what)
            return None if value is None else int(value)

        floats = {n: optional_number(obj, n, what) for n in (
            "power", "power_se", "calls", "pb_half_width", "pb_half_width_se",
            "prompt_tokens", "completion_tokens", "wall_s", "money")}
        if floats["power_se"] == 0.0 and obj.get("power_method") == "normal approximation":
            floats["power_se"] = None  # plans written before 2026-12-06 stored 0 here
        effect = obj.get("effect")  # absent in plans written before designs carried it
        return cls(design=str(obj["design"]), k=int(number(obj, "k", what)),
                   orders=int(number(obj, "orders", what)),
                   temperatures=int(number(obj, "temperatures", what)),
                   alpha=number(obj, "alpha", what),
                   alpha_per_cell=number(obj, "alpha_per_cell", what),
                   queries=opt_int("queries"), calls_max=opt_int("calls_max"),
                   max_evaluations=opt_int("max_evaluations"),
                   power_method=str(need(obj, "power_method", what)),
                   adequate=bool(obj.get("adequate", False)),
                   cheapest=bool(obj.get("cheapest", False)),
                   note=str(obj.get("note", "")),
                   effect=None if effect is None else Effect.from_dict(effect), **floats)


@dataclass(frozen=True)
class AuditPlan:
    """Every design planned for its effect; :meth:`to_list` is ``plan --json``.

    ``effect`` plans every design but, when ``exact_effect`` is given (a pilot that
    recorded choice-probability vectors: the vectors' effect, ``effect`` then the
    answers'), the exact ones; each design carries its own (``DesignPlan.effect``).
    ``target_power`` is what "adequate" means -- or, with ``target_half_width``, PB's
    CI half-width at most that; ``queries_given`` the size asked about (``None``: each
    design sized for the target). ``cheapest`` names the adequate
    design with the least money, else wall time, else expected calls (``None`` when
    no design is adequate).
    """

    designs: tuple[DesignPlan, ...]
    effect: Effect
    cost: CallCost
    target_power: float
    queries_given: int | None
    confidence_level: float
    reps: int
    seed: int | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)
    target_half_width: float | None = None
    exact_effect: Effect | None = None

    @property
    def cheapest(self) -> str | None:
        """The marked design's name."""
        return next((d.design for d in self.designs if d.cheapest), None)

    def effect_of(self, design: DesignPlan) -> Effect:
        """The effect ``design`` was planned with: its own, else (a design read without
        one) the vectors' for an exact design when the plan has them, else ``effect``."""
        if design.effect is not None:
            return design.effect
        exact = DESIGNS[design.design][0] == "exact"
        return self.exact_effect if exact and self.exact_effect is not None else self.effect

    def to_list(self) -> list[dict[str, Any]]:
        """One dict per design, each with its effect (``effect``, and its ``pb``,
        ``p_bias`` and source flat) and the plan's ``target_power`` and
        ``batch_discount`` (the share of the live price ``money`` is at: 1.0 live, 0.5 a
        provider batch), self-contained: a run can take one."""
        extra = {"target_power": self.target_power,
                 "target_half_width": self.target_half_width,
                 "batch_discount": self.cost.batch_discount}
        rows = []
        for d in self.designs:
            eff = self.effect_of(d)
            rows.append({**d.to_dict(), "effect": eff.to_dict(), "pb": eff.pb,
                         "p_bias": eff.p_bias, "effect_source": eff.source, **extra})
        return rows

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, everything."""
        return {"designs": [{**d.to_dict(), "effect": self.effect_of(d).to_dict()}
                            for d in self.designs],
                "effect": self.effect.to_dict(),
                "exact_effect": None if self.exact_effect is None
                else self.exact_effect.to_dict(), "cost": self.cost.to_dict(),
                "target_power": self.target_power, "queries_given": self.queries_given,
                "confidence_level": self.confidence_level, "reps": self.reps,
                "seed": self.seed, "cheapest": self.cheapest, "notes": list(self.notes),
                "target_half_width": self.target_half_width}

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> AuditPlan:
        """Read :meth:`to_dict` back; a plan written before designs carried their effect
        (one effect for every design, no ``exact_effect``) gives each design that one."""
        what = "AuditPlan"
        obj = as_mapping(obj, what)
        designs = need(obj, "designs", what)
        if not isinstance(designs, list):
            raise InputError("AuditPlan: `designs` must be a list")
        given = optional_number(obj, "queries_given", what)
        seed = obj.get("seed")
        exact = obj.get("exact_effect")
        effect = Effect.from_dict(need(obj, "effect", what))
        exact_effect = None if exact is None else Effect.from_dict(exact)
        read = [DesignPlan.from_dict(d) for d in designs]
        plans = tuple(d if d.effect is not None else replace(
            d, effect=exact_effect if exact_effect is not None
            and DESIGNS[d.design][0] == "exact" else effect) for d in read)
        return cls(designs=plans, effect=effect, exact_effect=exact_effect,
                   cost=CallCost.from_dict(need(obj, "cost", what)),
                   target_power=number(obj, "target_power", what),
                   queries_given=None if given is None else int(given),
                   confidence_level=number(obj, "confidence_level", what),
                   reps=int(number(obj, "reps", what)),
                   seed=None if seed is None else int(seed),
                   notes=tuple(str(n) for n in obj.get("notes", [])),
                   target_half_width=optional_number(obj, "target_half_width", what))


def _check_plan_args(orders: int, temperatures: int, alpha: float, power: float,
                     queries: int | None, designs: Sequence[str], reps: int,
                     half_width: float | None) -> None:
    for name, value, low in (("orders", orders, 1), ("temperatures", temperatures, 1),
                             ("reps", reps, 2)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
            raise InputError(MSG_INT.format(name=name, low=low, value=value))
    if queries is not None and (isinstance(queries, bool) or not isinstance(
            queries, int | np.integer) or queries < 2):
        raise InputError(MSG_INT.format(name="queries", low=2, value=queries))
    if not 0.0 < alpha < 1.0:
        raise InputError(MSG_ALPHA.format(value=alpha))
    if not alpha < power < 1.0:
        raise InputError(MSG_POWER.format(alpha=alpha, value=power))
    if not designs or any(d not in DESIGNS for d in designs):
        raise InputError(MSG_DESIGN.format(choices=tuple(DESIGNS), value=list(designs)))
    if half_width is not None and (queries is not None or isinstance(half_width, bool)
                                   or not isinstance(half_width, float | int)
                                   or not 0.0 < half_width <= 0.5):
        raise InputError(MSG_HALF_WIDTH.format(value=half_width))


def plan_audit(
    effect: Effect,
    *,
    exact_effect: Effect | None = None,
    orders: int,
    temperatures: int = 1,
    alpha: float = 0.05,
    power: float = 0.8,
    queries: int | None = None,
    designs: Sequence[str] = tuple(DESIGNS),
    cost: CallCost | None = None,
    reps: int = 400,
    half_width_reps: int = 100,
    confidence_level: float = 0.95,
    round_evaluations: int = 20,
    half_width: float | None = None,
    rng: np.random.Generator | int | None = None,
) -> AuditPlan:
    """Size and price every design for ``effect`` (the exact ones for ``exact_effect``
    when given).

    Without ``queries``, each design gets the smallest number of queries (per cell)
    that reaches ``power`` at ``alpha / temperatures``; with ``queries``, each design's
    power at that size. Fixed designs: POB-UNBP's power by
    :func:`~recaudit.positional._planning.fixed_power` (its decision simulated up to
    ``SIMULATED_QUERIES`` queries, a normal approximation above), PB's CI half-width by
    ``half_width_reps`` simulated data sets. Sequential: ``reps`` simulated stopping
    times of the default e-process (``exact+sequential``: on the per-evaluation choice
    vectors); a cell reads whole query blocks in rounds of
    >= ``round_evaluations`` evaluations (the runner's rounds), so a crossing is paid
    up to its round's end; the expected calls are ``E[min(paid, budget)]``.

    Parameters
    ----------
    effect : Effect
        What to detect (``Effect.from_p_bias``, ``Effect(k=..., pb=...)`` or
        :func:`effect_from_evaluations`).
    exact_effect : Effect, optional
        What the exact designs detect, when it is not ``effect``: a pilot's effect on
        its choice-probability vectors, ``effect`` then its answers' (at temperature 0
        the greedy answers are more biased than the vectors: SmolLM2 PB 0.600 against
        0.271, docs/exact-and-sequential.md).
    orders : int
        Random orders (calls) per query.
    temperatures : int
        Cells audited alike (calls multiply; level per cell ``alpha / temperatures``).
    alpha, power : float
        Family-wise level and target power per cell.
    queries : int, optional
        The size to evaluate instead of searching.
    designs : sequence of str
        Names from :data:`~recaudit.positional._planning.DESIGNS`.
    cost : CallCost, optional
        Tokens per call, rate and price (unknown parts stay ``None``).
    reps, half_width_reps : int
        Simulated paths of the sequential test; simulated data sets per half-width.
    half_width : float, optional
        Size the fixed designs for PB's CI half-width at most this (instead of
        ``power``; :func:`~recaudit.positional._planning.queries_for_half_width`); their
        power at that size is reported, and sequential designs are not sized (a width
        is a fixed-sample target).
    rng : numpy.random.Generator or int, optional
        Seeds every simulation.
    """
    _check_plan_args(orders, temperatures, alpha, power, queries, designs, reps, half_width)
    if exact_effect is not None and exact_effect.k != effect.k:
        raise InputError(MSG_EXACT_K.format(k=effect.k, exact=exact_effect.k))
    cost = cost or CallCost()
    gen = as_generator(rng)
    plans = []
    for name in designs:
        answers, stopping = DESIGNS[name]
        eff = exact_effect if answers == "exact" and exact_effect is not None else effect
        if stopping == "fixed":
            plan = _plan_fixed(name, eff, orders, temperatures, alpha, power, queries,
                               half_width_reps, confidence_level, gen, half_width)
        elif half_width is not None:
            plan = _unsized(name, eff, orders, temperatures, alpha, NOTE_WIDTH_SEQUENTIAL)
        else:
            plan = _plan_sequential(name, eff, orders, temperatures, alpha, power,
                                    queries, reps, round_evaluations, gen)
        spent: dict[str, Any] = cost.spend(plan.calls) if plan.calls is not None else {}
        adequate = (plan.power is not None and plan.power >= power) if half_width is None \
            else plan.pb_half_width is not None and plan.pb_half_width <= half_width
        plans.append(replace(plan, **spent, adequate=adequate, effect=eff))
    notes = _pilot_notes(effect, orders, temperatures, alpha, power)
    if exact_effect is not None:
        notes += _pilot_notes(exact_effect, orders, temperatures, alpha, power, "exact")
    return AuditPlan(designs=_mark_cheapest(plans), effect=effect, cost=cost,
                     target_power=power, queries_given=queries,
                     confidence_level=confidence_level, reps=reps,
                     seed=rng if isinstance(rng, int) else None, notes=notes,
                     target_half_width=None if half_width is None else float(half_width),
                     exact_effect=exact_effect)


def _unsized(name: str, effect: Effect, orders: int, temperatures: int, alpha: float,
             note: str) -> DesignPlan:
    """A design the plan does not size (its reason in ``note``)."""
    return DesignPlan(design=name, k=effect.k, orders=orders, temperatures=temperatures,
                      alpha=alpha, alpha_per_cell=alpha / temperatures, queries=None,
                      power=None, power_se=None, power_method="not sized", calls=None,
                      calls_max=None, max_evaluations=None, note=note)


def _plan_fixed(name: str, effect: Effect, orders: int, temperatures: int, alpha: float,
                power: float, queries: int | None, hw_reps: int, level: float,
                gen: np.random.Generator, half_width: float | None = None) -> DesignPlan:
    answers = DESIGNS[name][0]
    cell_alpha = alpha / temperatures
    hw = hw_se = None
    n: int | None
    if half_width is not None:
        sized = queries_for_half_width(effect, answers=answers, orders=orders,
                                       target=half_width, reps=hw_reps, gen=gen,
                                       confidence_level=level)
        if sized is None:
            return _unsized(name, effect, orders, temperatures, alpha, NOTE_WIDTH_HORIZON)
        n, hw, hw_se = sized
    else:
        n = queries if queries is not None else fixed_queries(
            effect, orders=orders, power=power, alpha=cell_alpha, answers=answers)
    base: dict[str, Any] = {
            "design": name, "k": effect.k, "orders": orders, "temperatures": temperatures,
            "alpha": alpha, "alpha_per_cell": cell_alpha}
    if n is None:
        return DesignPlan(**base, queries=None, power=None, calls=None, calls_max=None,
                          max_evaluations=None, note=NOTE_NO_EFFECT, power_se=None,
                          power_method="normal approximation")
    achieved = fixed_power(effect, orders=orders, queries=n, alpha=cell_alpha,
                           answers=answers)
    base.update(power_se=fixed_power_se(achieved, n), power_method=fixed_power_method(n))
    note = ""
    if hw is None and n * orders * effect.k <= 20 * MAX_SEQUENTIAL_EVALUATIONS:
        hw, hw_se = pb_half_width(effect, answers=answers, orders=orders, queries=n,
                                  reps=hw_reps, gen=gen, confidence_level=level)
    elif hw is None:
        note = "PB half-width not simulated at this size"
    calls = n * orders * temperatures
    return DesignPlan(**base, queries=n, power=achieved, calls=float(calls), calls_max=calls,
                      max_evaluations=n * orders, pb_half_width=hw, pb_half_width_se=hw_se,
                      note=note)


def _plan_sequential(name: str, effect: Effect, orders: int, temperatures: int,
                     alpha: float, power: float, queries: int | None, reps: int,
                     round_evaluations: int, gen: np.random.Generator) -> DesignPlan:
    cell_alpha = alpha / temperatures
    base: dict[str, Any] = {
            "design": name, "k": effect.k, "orders": orders, "temperatures": temperatures,
            "alpha": alpha, "alpha_per_cell": cell_alpha,
            "power_method": f"simulation ({reps} paths)"}
    cap = max(2, MAX_SEQUENTIAL_EVALUATIONS // orders)
    if queries is not None:
        horizon = min(queries, cap)
    else:
        fixed_n = fixed_queries(effect, orders=orders, power=power, alpha=cell_alpha,
                                answers=DESIGNS[name][0])
        if fixed_n is None:
            return DesignPlan(**base, queries=None, power=None, power_se=None, calls=None,
                              calls_max=None, max_evaluations=None, note=NOTE_NO_EFFECT)
        horizon = min(cap, max(2, math.ceil(SEQUENTIAL_HORIZON * fixed_n)))
    answers = DESIGNS[name][0]
    # evidence per query block: sampled positions, or every call's vector (exact)
    valid = orders * (1.0 if answers == "exact" else 1.0 - effect.discard_rate)
    tau = sequential_stopping_times(effect, orders=orders, max_queries=horizon,
                                    alpha=cell_alpha, reps=reps, gen=gen, answers=answers)
    blocks = np.ceil(tau / valid)  # query blocks up to the crossing (inf: none)
    if queries is not None:
        n = queries
    else:
        ranked = np.sort(blocks)
        n_star = ranked[min(reps - 1, math.ceil(power * reps) - 1)]
        if not np.isfinite(n_star):
            return DesignPlan(**base, queries=None, power=None, power_se=None, calls=None,
                              calls_max=None, max_evaluations=None,
                              note=NOTE_HORIZON.format(n=horizon))
        n = max(2, int(n_star))
    achieved = float(np.mean(blocks <= n))
    per_round = math.ceil(round_evaluations / orders)  # query blocks per round
    paid = np.minimum(np.ceil(blocks / per_round) * per_round, n) * orders
    note = NOTE_SEQUENTIAL_CI + ("" if queries is None or queries <= cap else
                                 f"; simulated up to {cap} queries")
    return DesignPlan(**base, queries=n, power=achieved,
                      power_se=math.sqrt(achieved * (1 - achieved) / reps),
                      calls=float(paid.mean()) * temperatures,
                      calls_max=n * orders * temperatures, max_evaluations=n * orders,
                      note=note)


def _mark_cheapest(plans: list[DesignPlan]) -> tuple[DesignPlan, ...]:
    """Mark the adequate design with the least money, else wall time, else calls."""
    ok = [p for p in plans if p.adequate and p.calls is not None]
    if not ok:
        return tuple(plans)
    for key in ("money", "wall_s", "calls"):
        if all(getattr(p, key) is not None for p in ok):
            best = min(ok, key=lambda p: float(getattr(p, key)))
            break
    return tuple(replace(p, cheapest=p is best) for p in plans)


def _pilot_notes(effect: Effect, orders: int, temperatures: int, alpha: float,
                 power: float, design: str = "fixed") -> tuple[str, ...]:
    """For a pilot's effect: its CI, and ``design``'s queries (a fixed design: ``fixed``
    or ``exact``) at the CI's low end."""
    if effect.source != "pilot" or effect.ci_low is None:
        return ()
    on = f" on the {effect.measured_on}" if effect.measured_on else ""
    notes = [f"pilot: PB = {effect.pb:.4f} [{effect.ci_low:.4f}, {effect.ci_high:.4f}]{on} "
             f"from {effect.pilot_queries} queries, {effect.pilot_evaluations} evaluations"]
    if effect.ci_low > 0:
        low = replace(effect, pb=effect.ci_low)
        n = fixed_queries(low, orders=orders, power=power, alpha=alpha / temperatures,
                          answers=DESIGNS[design][0])
        notes.append(f"at the CI's lower end (PB = {effect.ci_low:.4f}) the {design} design "
                     f"needs {n if n is not None else 'more than 1,000,000'} queries")
    else:
        notes.append("the pilot's CI of PB includes 0: a bias may be absent, and no size "
                     "guarantees the target power")
    return tuple(notes)


# -- the pilot ---------------------------------------------------------------------


def _variance_components(values: npt.NDArray[np.float64], query: npt.NDArray[np.int64],
                         n_queries: int) -> tuple[float, float]:
    """(between, within) by the method of moments, pooled over positions.

    ``values`` (n, k): each evaluation's indicator or probability vector. within =
    mean over queries with >= 2 evaluations of the per-query variance (ddof 1);
    between = var_j of the query means - mean_j(within_j / l_j), clipped at 0
    (Searle, Casella & McCulloch 1992, ch. 3, unbalanced one-way ANOVA estimator).
    """
    k = values.shape[1]
    sums = np.zeros((n_queries, k))
    squares = np.zeros((n_queries, k))
    np.add.at(sums, query, values)
    np.add.at(squares, query, values**2)
    sizes = np.bincount(query, minlength=n_queries).astype(float)
    means = sums / sizes[:, None]
    many = sizes >= 2
    if many.sum() < 2:
        raise InputError("the pilot needs >= 2 queries with >= 2 evaluations each to "
                         "estimate its variance components")
    within_j = (squares[many] - sizes[many, None] * means[many] ** 2) / (sizes[many, None] - 1)
    within = float(within_j.mean())
    between = float(means[many].var(axis=0, ddof=1).mean()
                    - (within_j / sizes[many, None]).mean())
    return max(0.0, between), max(0.0, within)


def effect_from_evaluations(
    table: pd.DataFrame,
    *,
    exact: bool = False,
    confidence_level: float = 0.95,
    n_boot: int = 200,
    rng: np.random.Generator | int | None = None,
) -> Effect:
    """The effect a pilot run shows: PB (cross-fitted, with its CI) and the variance
    components the plan needs.

    ``table`` is one analysis group of an evaluations table (one model, k,
    temperature and condition). PB is :func:`~recaudit.positional.positional_bias`'s
    estimate on the sampled choices (``measured_on="answers"``), or, with ``exact``,
    on the per-query mean choice probabilities (as ``analyze --exact``;
    ``measured_on="vectors"``); ``between`` and ``within_exact`` are the
    method-of-moments components (:func:`_variance_components`); ``discard_rate`` is
    the share of rows without a selected position; ``profile`` the direction of the
    bias in the mean shares (:func:`_profile`: the plan keeps the pilot's shape,
    decision 0415). A pilot with vectors gives both
    effects: the answers' plans the sampled designs, the vectors' the exact ones
    (:func:`plan_audit`'s ``exact_effect``).
    """
    gen = as_generator(rng)
    discard = 0.0
    if "selected_position" in table.columns and len(table):
        discard = float(table["selected_position"].isna().mean())
    if exact:
        ev = exact_evaluations_from_table(table)
        shares = ev.query_shares()
        between, within = _variance_components(ev.probs, ev.query, ev.n_queries)
        k, n_q, n_e, w_exact = ev.k, ev.n_queries, ev.n_evaluations, within
    else:
        evs = evaluations_from_table(table)
        shares = query_position_shares(evs)
        onehot = np.eye(evs.k)[evs.position]
        between, _ = _variance_components(onehot, evs.query, evs.n_queries)
        k, n_q, n_e, w_exact = evs.k, evs.n_queries, int(evs.query.size), None
    pb = pb_from_shares(shares, crossfit_shares(shares, gen, n_boot=n_boot), confidence_level)
    profile, top = _profile(shares)
    return Effect(k=k, pb=min(top, pb.value), between=between, within_exact=w_exact,
                  discard_rate=min(discard, 0.99), source="pilot", ci_low=pb.ci.low,
                  ci_high=pb.ci.high, pilot_queries=n_q, pilot_evaluations=n_e,
                  measured_on="vectors" if exact else "answers", profile=profile)


def _profile(shares: npt.NDArray[np.float64]) -> tuple[tuple[float, ...] | None, float]:
    r"""The pilot's direction of bias and the largest PB it admits.

    :math:`d = (\hat q - 1/k) / TV(\hat q)`, with :math:`\hat q` the mean of the
    per-query shares (PB's plug-in estimate is :math:`TV(\hat q)`); the largest PB
    keeping :math:`1/k + PB\, d \ge 0` is :math:`(1/k) / \max_p(-d_p)`, at most
    :math:`1 - 1/k`. ``None`` (and :math:`1 - 1/k`) when the shares are uniform.
    """
    k = shares.shape[1]
    dev = shares.mean(axis=0) - 1.0 / k
    tv = float(np.clip(dev, 0.0, None).sum())
    top = 1.0 - 1.0 / k
    if tv <= 1e-12:
        return None, top
    d = dev / tv
    d = d - d.mean()  # an exact zero sum against rounding
    return tuple(float(x) for x in d), min(top, 1.0 / k / max(float(-d.min()), 1e-300))
