r"""Paired comparisons of recommenders on the inter-bias figures (issue 35, item 2).

Every model is evaluated on the same users (those with a test item) and test items, so
each user contributes one value per model: a paired design. For a pair ``(A, B)``, a
metric ``M@N`` and its per-user values :math:`x_{Au}, x_{Bu}`:

- *means* (all users, and each group): :math:`\bar x_A - \bar x_B`;
- *gaps*: :math:`RD_A - RD_B` with
  :math:`RD = (\bar x_{UG} - \bar x_{PG}) / (\bar x_{UG} + \bar x_{PG})`, and
  :math:`NRD = (RD + 1)/2`;
- *inter-bias*: :math:`IB_A - IB_B` with :math:`IB = \sqrt{NRD\,(1 - IC)}`, tested by
  swapping each user's two whole lists so that both models' item coverage IC is
  recomputed under the null, its interval :math:`D \pm t_{n-1}\, \widehat{se}_J` from
  the delete-one-user jackknife with both models' NRD and IC recomputed without each
  user (:mod:`recaudit.fairness._compare_interbias`; Efron & Stein 1981).

Intervals (but IB's): a user-level bootstrap stratified by group, the same resampled users for
both models (multinomial weights, :func:`recaudit._stats.bootstrap_weights`), the
expanded percentile interval (:func:`recaudit._stats.expanded_level`; the users of the
row as its units). Tests of "no difference", two-sided: the paired permutation
(each user's two values swapped with probability 1/2 -- exact under the null that the
two models are exchangeable per user; +1-corrected Monte-Carlo p), or for the means
the paired t test or the Wilcoxon signed-rank test (:func:`scipy.stats.ttest_rel`,
:func:`scipy.stats.wilcoxon`, the tests ranx and WarpRec offer). RD and NRD are tested
by the paired permutation, IB by the list swap. A difference that is exactly 0 for
every user has p = 1. The rows of one kind (the mean over all users, one group's mean,
RD, NRD, IB) over
every pair, metric and cut-off are one family, adjusted by Holm or Benjamini-Hochberg
(:mod:`recaudit._multiplicity`), with intervals at the family's level; the paired
permutations are raised to the count the family needs for its smallest p to pass
(:func:`permutations_needed`).

References
----------
Good, P. (2005). *Permutation, Parametric, and Bootstrap Tests of Hypotheses*, 3rd ed.,
ch. 3 (the paired permutation test).
Efron, B. & Stein, C. (1981). The jackknife estimate of variance. *Ann. Statist.*
9(3):586-596 (IB's interval).
Smucker, M. D., Allan, J. & Carterette, B. (2007). A comparison of statistical
significance tests for information retrieval evaluation. *CIKM '07*, 623-632.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import combinations
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy import stats

from .._multiplicity import adjust_pvalues, adjusted_level, check_adjust
from .._stats import (
    as_generator,
    bootstrap_weights,
    expanded_level,
    monte_carlo_pvalue,
    percentile_interval,
)
from ..exceptions import InputError
from ._compare_interbias import (
    IB,
    CoverageDesign,
    PairCoverage,
    ib_jackknife,
    ib_pvalues,
    ib_values,
)
from ._compare_results import FairnessComparison, MetricComparison
from ._inputs import _evaluate_iv
from ._interbias import normalized_relative_difference, relative_difference
from ._metrics import METRICS, _union_index, ranking_metrics
from ._options import EvaluateOptions
from ._protocol import Protocol, _candidates_iv

__all__ = ["STAT_TESTS", "compare_models", "permutations_needed"]

STAT_TESTS = ("permutation", "t", "wilcoxon")
MSG_TEST = "`stat_test` must be one of permutation, t, wilcoxon, got {value!r}"
MSG_MODELS = ("comparing needs >= 2 models as a mapping name -> recs table, got {n}; "
              "pass --recs NAME=PATH twice or more")
MSG_NO_BOOT = "comparing needs `n_boot` >= 1 (the intervals) and `n_resamples` >= 1 (the tests)"
GAPS = ("rd", "nrd")


@dataclass(frozen=True)
class _Model:
    """One model's per-user metric matrix (users x keys) and its lists (users x N, item
    codes shared by every model, ``-1`` pads)."""

    x: npt.NDArray[np.float64]
    items: npt.NDArray[np.int64]


@dataclass(frozen=True)
class _Design:
    """What every pair shares: the users' groups, the keys, the options."""

    codes: npt.NDArray[np.intp]
    names: tuple[str, ...]
    protected: npt.NDArray[np.bool_]  # per group
    keys: tuple[str, ...]
    options: EvaluateOptions
    members: tuple[npt.NDArray[np.intp], ...]  # the users of each group
    sizes: npt.NDArray[np.float64]  # their numbers
    coverage: CoverageDesign  # the cut-offs and catalog of the IB rows


def _gaps(sums: npt.NDArray[np.float64], sizes: npt.NDArray[np.float64],
          prot: npt.NDArray[np.bool_]) -> dict[str, npt.NDArray[np.float64]]:
    """RD and NRD from group sums (... x G x K)."""
    pg = sums[..., prot, :].sum(axis=-2) / sizes[prot].sum()
    ug = sums[..., ~prot, :].sum(axis=-2) / sizes[~prot].sum()
    with np.errstate(invalid="ignore", divide="ignore"):
        rd = relative_difference(ug, pg)
    return {"rd": rd, "nrd": normalized_relative_difference(rd)}


def _figures(sums: npt.NDArray[np.float64], design: _Design) -> dict[str, Any]:
    """Every compared figure of one model from its group sums (... x G x K): ``mean``
    (... x K), ``group`` (... x G x K) and the gaps."""
    sizes = design.sizes
    return {"mean": sums.sum(axis=-2) / sizes.sum(), "group": sums / sizes[:, None],
            **_gaps(sums, sizes, design.protected)}


def _group_sums(x: npt.NDArray[np.float64], members: Sequence[npt.NDArray[np.intp]],
                w: npt.NDArray[np.float64] | None = None) -> npt.NDArray[np.float64]:
    """Per-group sums of ``x`` (G x K), or of each weighted resample (b x G x K)."""
    if w is None:
        return np.stack([x[idx].sum(axis=0) for idx in members])
    return np.stack([w[:, idx] @ x[idx] for idx in members], axis=1)


def _flatten(fig: dict[str, Any]) -> npt.NDArray[np.float64]:
    """The figures as one vector per resample, in row order: for each key the mean,
    each group, then rd and nrd."""
    blocks = np.concatenate([fig["mean"][..., None, :], fig["group"],
                             *(fig[g][..., None, :] for g in GAPS)], axis=-2)
    stacked = np.swapaxes(blocks, -1, -2)  # ... x K x (1 + G + 3)
    return stacked.reshape(*stacked.shape[:-2], -1)


def _replicates(a: _Model, b: _Model, design: _Design, gen: np.random.Generator
                ) -> npt.NDArray[np.float64]:
    """Bootstrap replicates of every row's difference (n_boot x rows)."""
    members = design.members
    out = []
    for w in bootstrap_weights(a.x.shape[0], design.options.n_boot, gen, strata=design.codes):
        wf = w.astype(np.float64)
        fa = _flatten(_figures(_group_sums(a.x, members, wf), design))
        fb = _flatten(_figures(_group_sums(b.x, members, wf), design))
        out.append(fa - fb)
    return np.concatenate(out)


def _permutation_null(a: _Model, b: _Model, design: _Design, gen: np.random.Generator,
                      coverage: PairCoverage
                      ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Under random per-user swaps of the two models' lists: |difference| of every row
    (n_resamples x rows) and the IB difference of every key (n_resamples x keys), both
    from the same swaps."""
    members = design.members
    n = a.x.shape[0]
    sums_a, sums_b = _group_sums(a.x, members), _group_sums(b.x, members)
    d = b.x - a.x
    chunk = max(1, min(design.options.n_resamples, 4_000_000 // max(n, 1)))
    out, ib, done = [], [], 0
    while done < design.options.n_resamples:
        m = min(chunk, design.options.n_resamples - done)
        swap = (gen.random((m, n)) < 0.5).astype(np.float64)
        delta = _group_sums(d, members, swap)
        fig_a, fig_b = _figures(sums_a + delta, design), _figures(sums_b - delta, design)
        out.append(np.abs(_flatten(fig_a) - _flatten(fig_b)))
        ic_a, ic_b = coverage.swapped(swap)
        ib.append(ib_values(fig_a["nrd"], ic_a, design.coverage)
                  - ib_values(fig_b["nrd"], ic_b, design.coverage))
        done += m
    return np.concatenate(out), np.concatenate(ib)


def _ib_rows(name_a: str, a: _Model, name_b: str, b: _Model, figures: tuple[Any, Any],
             coverage: PairCoverage, null: npt.NDArray[np.float64], design: _Design
             ) -> list[dict[str, Any]]:
    r"""The pair's IB rows (one per key): the difference ``D``, its permutation p, the
    interval :math:`D \pm t_{n-1}\, \widehat{se}_J` from the delete-one-user jackknife
    (:func:`~recaudit.fairness._compare_interbias.ib_jackknife`)."""
    ic_a, ic_b = coverage.observed()
    ib_a = ib_values(figures[0]["nrd"], ic_a, design.coverage)
    ib_b = ib_values(figures[1]["nrd"], ic_b, design.coverage)
    diff = ib_a - ib_b
    pvalues = ib_pvalues(diff, null)
    se = ib_jackknife(a.x, b.x, design.protected[design.codes], coverage, design.coverage)
    n, level = int(design.codes.size), design.options.confidence_level
    rows = []
    for k, key in enumerate(design.keys):
        low, high = _t_interval(float(diff[k]), float(se[k]), level, n)
        rows.append({
            "a": name_a, "b": name_b, "metric": f"{IB}_{key}", "group": "",
            "value_a": float(ib_a[k]), "value_b": float(ib_b[k]),
            "difference": float(diff[k]), "ci_low": low, "ci_high": high,
            "confidence_level": level, "pvalue": float(pvalues[k]),
            "test": "permutation", "n_users": n, "_se": float(se[k]),
        })
    return rows


def _paired_test(xa: npt.NDArray[np.float64], xb: npt.NDArray[np.float64], test: str
                 ) -> npt.NDArray[np.float64]:
    """Per-column two-sided p of the paired t or Wilcoxon test (1 where every
    difference is 0)."""
    d = xa - xb
    out = np.ones(d.shape[1])
    for j in np.flatnonzero(np.any(d != 0, axis=0)):
        if test == "t":
            out[j] = stats.ttest_rel(xa[:, j], xb[:, j]).pvalue
        else:
            out[j] = stats.wilcoxon(d[:, j]).pvalue
    return out


def _row_labels(design: _Design) -> list[tuple[str, str, int]]:
    """(metric, group, group index or -1) of every row, in :func:`_flatten` order."""
    out = []
    for key in design.keys:
        out.append((key, "", -1))
        out += [(key, name, g) for g, name in enumerate(design.names)]
        out += [(f"{gap}_{key}", "", -1) for gap in GAPS]
    return out


def _pair_rows(name_a: str, a: _Model, name_b: str, b: _Model, design: _Design, test: str,
               gen: np.random.Generator) -> list[dict[str, Any]]:
    """The rows of one pair, with their standard errors (``_se``) for the family's level."""
    members = design.members
    fig_a = _figures(_group_sums(a.x, members), design)
    fig_b = _figures(_group_sums(b.x, members), design)
    va, vb = _flatten(fig_a), _flatten(fig_b)
    reps = _replicates(a, b, design, gen)
    coverage = PairCoverage(a.items, b.items, design.coverage)
    null, null_ib = _permutation_null(a, b, design, gen, coverage)
    labels = _row_labels(design)
    if test != "permutation":
        by_group = {-1: _paired_test(a.x, b.x, test)} | {
            g: _paired_test(a.x[idx], b.x[idx], test) for g, idx in enumerate(members)}
    level = design.options.confidence_level
    rows = []
    for j, (metric, group, g) in enumerate(labels):
        diff = float(va[j] - vb[j])
        users = a.x.shape[0] if g < 0 else members[g].size
        row_test = "permutation" if metric.split("_", 1)[0] in GAPS else test
        if not math.isfinite(diff):
            p = math.nan
        elif row_test == "permutation":
            p = monte_carlo_pvalue(abs(diff), null[:, j])
        else:
            p = float(by_group[g][design.keys.index(metric)])
        ci = percentile_interval(reps[:, j], confidence_level=expanded_level(level, users))
        rows.append({
            "a": name_a, "b": name_b, "metric": metric, "group": group,
            "value_a": float(va[j]), "value_b": float(vb[j]), "difference": diff,
            "ci_low": ci.low if math.isfinite(diff) else math.nan,
            "ci_high": ci.high if math.isfinite(diff) else math.nan,
            "confidence_level": level, "pvalue": p,
            "test": row_test, "n_users": users, "_se": _boot_se(reps[:, j]),
        })
    return rows + _ib_rows(name_a, a, name_b, b, (fig_a, fig_b), coverage, null_ib, design)


def _family(r: Mapping[str, Any]) -> str:
    """The family of a row: its kind -- the mean over all users, one group's mean, or a
    gap (``rd``, ``nrd``, ``ib``) -- over every pair, metric and cut-off."""
    kind = r["metric"].split("_", 1)[0]
    return kind if kind in (*GAPS, IB) else f"group {r['group']}" if r["group"] else "mean"


def _boot_se(reps: npt.NDArray[np.float64]) -> float:
    """The bootstrap standard error of a row (``nan`` with fewer than 2 finite
    replicates)."""
    r = reps[np.isfinite(reps)]
    return float(np.std(r, ddof=1)) if r.size >= 2 else math.nan


def _t_interval(diff: float, se: float, level: float, n: int) -> tuple[float, float]:
    r"""The interval :math:`d \pm t_{n-1,\,(1+c)/2}\, \widehat{se}` at level ``c``.

    At a family's level with the bootstrap standard error :math:`\widehat{se}^*` of a
    row: a family's level (1 - 0.05/45 for 45 rows) puts each end beyond the last
    resample of a percentile interval (0.06 % of 1,000), where its end is one
    resample's noise; the standard error is stable (measured:
    docs/validation-fairness.md, "Comparing models"). IB rows use their jackknife
    :math:`\widehat{se}_J` at both levels."""
    if not (math.isfinite(diff) and math.isfinite(se)):
        return math.nan, math.nan
    half = float(stats.t.ppf(0.5 + level / 2, max(n - 1, 1)) * se)
    return diff - half, diff + half


def _adjust(rows: list[dict[str, Any]], adjust: str, level: float) -> list[MetricComparison]:
    """Each family's adjusted p-values and intervals (:func:`_family`); the rows as
    results, in order."""
    out: list[MetricComparison | None] = [None] * len(rows)
    for family in dict.fromkeys(_family(r) for r in rows):
        idx = [i for i, r in enumerate(rows) if _family(r) == family]
        adjusted = adjust_pvalues([rows[i]["pvalue"] for i in idx], adjust)
        fam = adjusted_level(adjusted, adjust, level)
        for i, p in zip(idx, adjusted, strict=True):
            r = dict(rows[i])
            low, high = _t_interval(r["difference"], r.pop("_se"), fam, r["n_users"])
            out[i] = MetricComparison(
                **r, pvalue_adjusted=float(p), adjust=adjust, ci_low_adjusted=low,
                ci_high_adjusted=high, adjusted_level=fam)
    return [r for r in out if r is not None]


def permutations_needed(n_models: int, n_keys: int, alpha: float) -> int:
    r"""The paired permutations a family needs before Holm can reject anything: its
    smallest p, :math:`1/(B+1)`, must reach :math:`\alpha/m` with
    :math:`m = \binom{n_{models}}{2} \cdot n_{keys}` rows, so :math:`B \ge m/\alpha - 1`."""
    m = n_models * (n_models - 1) // 2 * n_keys
    return max(1, math.ceil(m / alpha) - 1)


def _catalog_size(recs: Mapping[str, pd.DataFrame], test: pd.DataFrame,
                  train: pd.DataFrame | None) -> int:
    """Items seen in any model's lists, the test or the training table: one catalog for
    every model, so that their coverages are comparable."""
    tables = [*recs.values(), test, *([] if train is None else [train])]
    return len(_union_index([t["item_id"].to_numpy() for t in tables if "item_id" in t]))


def _shared_codes(codes: npt.NDArray[np.int64], own: pd.Index, shared: pd.Index
                  ) -> npt.NDArray[np.int64]:
    """A model's item codes (into its own catalog index) as codes into ``shared``."""
    out = np.full(codes.shape, -1, dtype=np.int64)
    listed = codes >= 0
    out[listed] = shared.get_indexer(own.to_numpy()[codes[listed]])
    return out


def _models(recs: Mapping[str, pd.DataFrame], test: pd.DataFrame, users: pd.DataFrame, *,
            attribute: str | Sequence[str], protected: Hashable | Sequence[Hashable],
            n_items: int | None, items: pd.DataFrame | None, train: pd.DataFrame | None,
            options: EvaluateOptions) -> tuple[dict[str, _Model], _Design, str]:
    """Every model's per-user matrix (rows: the evaluated users, those with a test item,
    in the users table's order -- the same rows for every model)."""
    if items is None and n_items is None:
        n_items = _catalog_size(recs, test, train)
    inputs = {name: _evaluate_iv(table, test, users, attribute=attribute,
                                 protected=protected, n_items=n_items, items=items,
                                 train=train, options=options, rng=0)
              for name, table in recs.items()}  # the evaluated users are the test's
    shared = _union_index([inp.item_index.to_numpy() for inp in inputs.values()])
    models: dict[str, _Model] = {}
    for name, inp in inputs.items():
        values = ranking_metrics(inp.lists.hits, inp.lists.n_relevant, n=inp.ns)
        models[str(name)] = _Model(np.hstack([values[m] for m in METRICS]),
                                   _shared_codes(inp.lists.items, inp.item_index, shared))
    names, codes = np.unique(inp.groups, return_inverse=True)
    members = tuple(np.flatnonzero(codes == g) for g in range(names.size))
    design = _Design(
        codes=codes.astype(np.intp), names=tuple(str(n) for n in names),
        protected=names == inp.protected,
        keys=tuple(f"{m}@{c}" for m in METRICS for c in inp.ns), options=options,
        members=members, sizes=np.array([idx.size for idx in members], dtype=np.float64),
        coverage=CoverageDesign(cuts=inp.ns, n_items=inp.n_items, cut_of_key=np.tile(
            np.arange(len(inp.ns), dtype=np.intp), len(METRICS))))
    return models, design, inp.protected


def _protocol_iv(protocol: str | Protocol | None, candidates: pd.DataFrame | None,
                 recs: Mapping[str, pd.DataFrame], test: pd.DataFrame) -> Protocol:
    """The protocol, every model's lists and the test checked against the candidates
    (as :func:`~recaudit.fairness.evaluate` checks one model's)."""
    used = [_candidates_iv(protocol, candidates, table, test) for table in recs.values()]
    return used[0]


def compare_models(
    recs: Mapping[str, pd.DataFrame],
    test: pd.DataFrame,
    users: pd.DataFrame,
    *,
    attribute: str | Sequence[str],
    protected: Hashable | Sequence[Hashable],
    n_items: int | None = None,
    items: pd.DataFrame | None = None,
    train: pd.DataFrame | None = None,
    options: EvaluateOptions | None = None,
    stat_test: str = "permutation",
    adjust: str = "holm",
    rng: np.random.Generator | int | None = None,
    candidates: pd.DataFrame | None = None,
    protocol: str | Protocol | None = None,
) -> FairnessComparison:
    r"""Compare every pair of recommenders on their metrics and group gaps, paired by user.

    Parameters
    ----------
    recs : mapping of str to pandas.DataFrame
        Model name -> its top-N lists (``user_id, item_id, rank``), two or more, all
        for the same ``test`` and ``users``.
    test, users, attribute, protected, n_items, items, train
        As for :func:`~recaudit.fairness.evaluate` (``train`` only widens the
        catalog). Without ``n_items`` and ``items`` the catalog is every item seen in
        any model's lists, the test or ``train``: one catalog for every model.
    options : EvaluateOptions, optional
        Cut-offs, ``n_boot`` (bootstrap resamples of each interval, >= 1),
        ``n_resamples`` (paired permutations of each test, >= 1; raised to
        :func:`permutations_needed` when fewer, so that the smallest permutation p can
        pass the family's adjustment -- the count used is the result's
        ``n_resamples``), ``min_group_size`` and ``confidence_level``.
    stat_test : {"permutation", "t", "wilcoxon"}
        The test of the per-user means (gap rows (RD, NRD) always use the paired
        permutation, IB rows the swap of whole lists; IB's interval is the
        delete-one-user jackknife's, see :mod:`recaudit.fairness._compare_interbias`).
    adjust : {"holm", "bh", "none"}
        Adjustment within each family: the rows of one kind (the mean over all users,
        one group's mean, RD, NRD or IB) over every pair, metric and cut-off.
    rng : numpy.random.Generator or int, optional
        Source of the resamples (an int seeds a new generator).
    candidates, protocol
        As for :func:`~recaudit.fairness.evaluate`: under a sampled protocol every
        model's lists were ranked within each user's ``candidates`` (each recommended
        and each test item must be one); the result names the protocol and carries its
        warnings (sampled metrics can reorder models and change group gaps).

    Returns
    -------
    FairnessComparison

    Raises
    ------
    InputError
        Fewer than two models, an unknown test or adjustment, zero resamples, or any
        input :func:`evaluate` refuses.
    """
    if not isinstance(recs, Mapping) or len(recs) < 2:
        raise InputError(MSG_MODELS.format(n=len(recs) if isinstance(recs, Mapping) else 0))
    if stat_test not in STAT_TESTS:
        raise InputError(MSG_TEST.format(value=stat_test))
    check_adjust(adjust)
    options = EvaluateOptions() if options is None else options
    if not isinstance(options, EvaluateOptions) or options.n_boot < 1 \
            or options.n_resamples < 1:
        raise InputError(MSG_NO_BOOT)
    gen = as_generator(rng)
    n_keys = len(METRICS) * len(options.n)
    alpha = 1.0 - options.confidence_level
    needed = permutations_needed(len(recs) if adjust != "none" else 2,
                                 n_keys if adjust != "none" else 1, alpha)
    if options.n_resamples < needed:  # else no permutation p could survive the family
        options = replace(options, n_resamples=needed)
    models, design, protected_name = _models(
        recs, test, users, attribute=attribute, protected=protected, n_items=n_items,
        items=items, train=train, options=options)
    used = _protocol_iv(protocol, candidates, recs, test)
    rows: list[dict[str, Any]] = []
    for name_a, name_b in combinations(models, 2):
        rows += _pair_rows(name_a, models[name_a], name_b, models[name_b], design,
                           stat_test, gen)
    return FairnessComparison(
        models=tuple(models), rows=tuple(_adjust(rows, adjust, options.confidence_level)),
        protected=protected_name, n=options.n, test=stat_test, adjust=adjust,
        n_boot=options.n_boot, n_resamples=options.n_resamples,
        confidence_level=options.confidence_level, n_users=design.codes.size,
        protocol=used.name, warnings=used.warnings())
