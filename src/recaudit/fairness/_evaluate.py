"""The model-agnostic inter-bias evaluation: group metrics, coverage, RD/NRD/IB, CIs.

:func:`evaluate` takes any recommender's top-N lists, the held-out test items and a
users table with one or more categorical attributes, and reports per-group and
overall top-N metrics, item coverage, popularity and exposure figures, and RD, NRD
and IB (Chizari, Tajfar & Moreno-García 2025) with user-level uncertainty:

- a stratified (by group) user-level bootstrap gives percentile CIs of every group
  mean, overall mean and IC, and BCa CIs of RD, NRD and IB (the acceleration from a
  jackknife over users within each group: :mod:`._interbias_interval`;
  :mod:`._resampling`);
- a permutation test of the group gap (protected labels shuffled over users) gives a
  +1-corrected Monte-Carlo p-value per metric and cut-off, Holm-adjusted over all of
  them.

The options are an :class:`~recaudit.fairness.EvaluateOptions` (:mod:`._options`),
the data are checked by :mod:`._inputs`, the result types are in :mod:`._results`.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pandas as pd

from .._stats import (
    UNBOUNDED,
    ConfidenceInterval,
    Estimate,
    bca_interval,
    bootstrap_interval,
    holm,
    jackknife_bias_corrected,
)
from ._exposure import (
    PopularityProfile,
    _coverage_jackknife,
    average_popularity,
    exposure_gini,
    item_coverage,
    popularity_profile,
)
from ._inputs import _evaluate_iv, _Inputs
from ._interbias import (
    UNDEFINED_RD_REASON,
    inter_bias,
    normalized_relative_difference,
    relative_difference,
)
from ._interbias_interval import INTER_BIAS_CI_RULE, interbias_jackknife
from ._metrics import METRICS, TopNLists, ranking_metrics
from ._options import EvaluateOptions
from ._protocol import Protocol, _candidates_iv
from ._resampling import _bootstrap, _permutation_pvalues
from ._results import COVERAGE_FIXED, NO_BOOT, FairnessEvaluation, GroupMetrics, InterBias
from .popularity._result import (
    CI_RULE,
    PopularityBias,
    _PopularityReplicates,
    _PopularityValues,
)

__all__ = ["evaluate"]


def evaluate(
    recs: pd.DataFrame,
    test: pd.DataFrame,
    users: pd.DataFrame,
    *,
    attribute: str | Sequence[str],
    protected: Hashable | Sequence[Hashable],
    n_items: int | None = None,
    items: pd.DataFrame | None = None,
    train: pd.DataFrame | None = None,
    options: EvaluateOptions | None = None,
    rng: np.random.Generator | int | None = None,
    candidates: pd.DataFrame | None = None,
    protocol: str | Protocol | None = None,
) -> FairnessEvaluation:
    r"""Group fairness and inter-bias of any recommender's top-N lists.

    For every metric ``M`` in ``ndcg, precision, recall, hit, mrr`` and cut-off ``N``
    (see :func:`ranking_metrics`) this reports the mean per group and overall, and

    .. math::

        RD_M = \frac{M_{UG} - M_{PG}}{M_{UG} + M_{PG}},\qquad
        NRD_M = \frac{RD_M + 1}{2},\qquad
        IB_M = \sqrt{NRD_M\,(1 - IC@N)}

    (Chizari, Tajfar & Moreno-García 2025), with ``PG`` the protected group and
    ``UG`` every other user pooled (for more than two groups the protected group is
    compared with all the others; every group's own mean is reported too). RD is
    ``nan`` with a reason when both means are 0. ``IC@N`` is the item coverage of the
    evaluated users' lists.

    Uncertainty is at the user level: a bootstrap of users stratified by group
    (``options.n_boot`` resamples) gives percentile CIs of every group and overall mean
    and of IC, and BCa CIs of RD, NRD and IB (``inter_bias_ci_rule``; the acceleration
    from a jackknife over users within each group: RD is a ratio of means whose
    distribution is skewed at small groups, where the percentile interval under-covers);
    the popularity-bias figures' rules are in ``popularity_bias.ci_rule``. IC is by
    default held at its observed value, because a bootstrap resample holds only ~63 %
    distinct users and its coverage is biased low (see ``options.resample_coverage``).
    A permutation test of ``|M_UG - M_PG|`` (``options.n_resamples`` shuffles of the
    protected label over users, +1-corrected p-value) is Holm-adjusted over all metrics
    and cut-offs.

    Parameters
    ----------
    recs : pandas.DataFrame
        Top-N lists: ``user_id, item_id, rank`` (ranks 1..L per user, no gaps or
        duplicates; a list may be shorter than ``N``: missing slots are misses).
    test : pandas.DataFrame
        Held-out relevant items: ``user_id, item_id`` (duplicates count once).
    users : pandas.DataFrame
        ``user_id`` and the attribute column(s); one row per user. Users without test
        items are excluded and counted; test users absent from ``recs`` score 0.
    attribute : str or sequence of str
        The attribute column(s); several form intersection groups named by the
        values joined with ``" & "`` (e.g. ``"F & 25"``). Values are compared by
        their string form.
    protected : scalar or sequence
        The protected group: a value of ``attribute`` (one per attribute for an
        intersection, or the joined group name).
    n_items, items : int or pandas.DataFrame, optional
        The catalog, as a size or as a table with ``item_id`` (then every item of
        recs/test/train must be in it). Neither: the items seen in recs, test and
        train (``catalog_source="observed"``).
    train : pandas.DataFrame, optional
        Training interactions (``item_id`` column, one row per interaction): item
        popularity for ARP, the long-tail share and the popularity profile. With a
        ``user_id`` column also ARP, APLT, ACLT, PopRSP, PopREO and novelty overall and
        per group with CIs (``popularity_bias``; see :mod:`.popularity._result`), and the
        ``popularity_group`` attribute: when ``attribute`` names it and ``users`` has no
        such column, it is added with
        :func:`~recaudit.fairness.add_popularity_groups` ``(users, train)`` made as
        ``options.popularity_groups`` says. The per-user popularity values are
        columns of ``per_user``.
    options : EvaluateOptions, optional
        Cut-offs ``n``, ``n_boot``, ``n_resamples``, ``min_group_size``,
        ``confidence_level``, ``resample_coverage`` and ``popularity_groups`` (default
        ``EvaluateOptions()``). With ``resample_coverage`` IC is recomputed on each
        bootstrap resample's lists (one sparse product per chunk), used in IB's CI
        and given its percentile CI; it is off by default because the union of the
        lists of a resample's distinct users is a subset of the observed union, so
        IC replicates are biased low (never above the estimate).
    rng : numpy.random.Generator or int, optional
        Source of randomness of the bootstrap and the permutation test (an int seeds
        a new generator, ``None`` draws OS entropy; a generator is used as is and
        advanced). The same options and seed give the same figures.
    candidates : pandas.DataFrame, optional
        ``user_id, item_id``: each user's candidate set under a sampled protocol
        (from :func:`~recaudit.fairness.sample_candidates`); every recommended item
        and every test item must be among its user's candidates. Given exactly when
        ``protocol`` is sampled.
    protocol : str or Protocol, optional
        How the lists were ranked: ``"full"`` (default, the whole catalog) or a
        sampled protocol (``"uni100"``, ``"pop100"``, ...; see
        :func:`~recaudit.fairness.parse_protocol`). It is recorded as
        ``protocol``; a sampled one adds its warnings (sampled metrics can reorder
        models and change group gaps; coverage and popularity figures are those of
        lists drawn from the candidates) to ``warnings``. The metrics are computed
        the same way under every protocol.

    Returns
    -------
    FairnessEvaluation

    Examples
    --------
    >>> from recaudit.fairness import EvaluateOptions, evaluate
    >>> result = evaluate(recs, test, users, attribute="gender", protected="F",
    ...                   options=EvaluateOptions(n=(5, 10)), rng=0)  # doctest: +SKIP
    >>> result.inter_bias["ndcg@10"].ib.value  # doctest: +SKIP

    Raises
    ------
    InputError
        On malformed tables (naming the column and row), unknown users or items,
        duplicated or gapped ranks, NaN attributes, an absent protected group, or a
        group smaller than ``options.min_group_size``; a sampled protocol without
        candidates (or the reverse), or a recommended or test item outside its
        user's candidates.

    References
    ----------
    Chizari, N., Tajfar, K. & Moreno-García, M. N. (2025). Measuring Inter-Bias
    Effects and Fairness-Accuracy Trade-Offs in GNN-Based Recommender Systems.
    Future Internet 17(10), 461.
    """
    inp = _evaluate_iv(
        recs, test, users, attribute=attribute, protected=protected, n_items=n_items,
        items=items, train=train, options=EvaluateOptions() if options is None else options,
        rng=rng,
    )
    used_protocol = _candidates_iv(protocol, candidates, recs, test)
    ns, lists = inp.ns, inp.lists
    values = ranking_metrics(lists.hits, lists.n_relevant, n=ns)
    keys = [f"{m}@{c}" for m in METRICS for c in ns]
    x = np.hstack([values[m] for m in METRICS])  # users x (metric-major) keys
    cut_of_key = np.tile(np.arange(len(ns)), len(METRICS))
    names, codes = np.unique(inp.groups, return_inverse=True)
    members = [np.flatnonzero(codes == g) for g in range(names.size)]
    is_protected = inp.groups == inp.protected
    ic = item_coverage(lists.items, n_items=inp.n_items, n=ns)
    source = inp.popularity_source
    pop = (None if source is None else _PopularityReplicates.of(
        _PopularityValues.of(source, lists, ns), members, source))
    boot = _Replicates(
        _bootstrap(x, lists, members, is_protected, ns, cut_of_key, ic, inp, pop),
        inp.options.confidence_level,
    )
    pvalues = _permutation_pvalues(x, is_protected, inp)
    left_out_ic = (_coverage_jackknife(lists.items, inp.n_items, ns)
                   if inp.options.resample_coverage
                   else np.broadcast_to(ic, (x.shape[0], len(ns))))[:, cut_of_key]
    jack = interbias_jackknife(x, members, is_protected, left_out_ic)
    order = [int(np.flatnonzero(names == inp.protected)[0])] + [
        g for g in range(names.size) if names[g] != inp.protected
    ]
    profile, arp, arp_norm, tail = _popularity_figures(lists, inp.popularity, inp.head, ns)
    opts = inp.options
    return FairnessEvaluation(
        attributes=inp.attributes,
        protected=inp.protected,
        unprotected=tuple(str(names[g]) for g in order[1:]),
        n=ns,
        groups=_group_results(x, keys, names, members, order, inp.protected, boot),
        overall={key: boot.estimate(x[:, k].mean(), "overall", k) for k, key in enumerate(keys)},
        inter_bias=_inter_bias_results(x, keys, is_protected, ic[cut_of_key], pvalues, boot,
                                       jack),
        inter_bias_ci_rule=INTER_BIAS_CI_RULE,
        item_coverage=_coverage_results(ic, ns, opts.resample_coverage, boot),
        exposure_gini=_by_cutoff(ns, exposure_gini(lists.items, n_items=inp.n_items, n=ns)),
        avg_popularity=arp,
        avg_popularity_normalized=arp_norm,
        long_tail_share=tail,
        popularity=profile,
        popularity_bias=_popularity_results(pop, inp, names, order, boot),
        popularity_bias_reason=inp.popularity_reason,
        n_users=int(lists.n_relevant.size),
        n_users_excluded=inp.n_users_excluded,
        n_users_without_recs=int((~lists.has_list).sum()),
        n_items=inp.n_items,
        catalog_source=inp.catalog_source,
        n_boot=opts.n_boot,
        n_resamples=opts.n_resamples,
        confidence_level=opts.confidence_level,
        min_group_size=opts.min_group_size,
        resample_coverage=opts.resample_coverage,
        per_user=_per_user_table(lists, inp.groups, keys, x, pop),
        protocol=used_protocol.name,
        warnings=used_protocol.warnings(),
    )


@dataclass(frozen=True)
class _Replicates:
    """The bootstrap replicates of one evaluation (``None``: ``n_boot=0``)."""

    reps: dict[str, npt.NDArray[np.float64]] | None
    confidence_level: float

    def rule_estimate(self, value: float, centre: float, rule: str, name: str,
                      *index: int, support: tuple[float, float] = UNBOUNDED) -> Estimate:
        """``value`` with the ``rule`` interval (:func:`bootstrap_interval`) of the
        replicates ``name[:, *index]`` around ``centre`` (the estimate on the replicates'
        scale; ``value`` itself but for the folded rule's signed ``d``), within the
        figure's range ``support``."""
        if self.reps is None:
            ci = ConfidenceInterval(np.nan, np.nan, self.confidence_level, NO_BOOT)
        else:
            column: tuple[slice | int, ...] = (slice(None), *index)
            ci = bootstrap_interval(rule, self.reps[name][column], centre,
                                    confidence_level=self.confidence_level, support=support)
        return Estimate(float(value), ci)

    def estimate(self, value: float, name: str, k: int) -> Estimate:
        """``value`` with the percentile CI of column ``k`` of replicates ``name``."""
        return self.rule_estimate(value, value, "percentile", name, k)

    def group_estimate(self, value: float, g: int, k: int, name: str = "groups") -> Estimate:
        """Like :meth:`estimate` for group ``g``'s value of key ``k`` (replicates ``name``)."""
        return self.rule_estimate(value, value, "percentile", name, g, k)

    def bca_estimate(self, value: float, name: str, k: int,
                     jackknife: list[npt.NDArray[np.float64]]) -> Estimate:
        """``value`` with the BCa CI (:func:`bca_interval`) of column ``k`` of replicates
        ``name``, the acceleration from column ``k`` of each stratum's ``jackknife``."""
        if self.reps is None:
            return self.rule_estimate(value, value, "percentile", name, k)
        ci = bca_interval(self.reps[name][:, k], float(value), [j[:, k] for j in jackknife],
                          confidence_level=self.confidence_level)
        return Estimate(float(value), ci)

    def n_undefined(self, k: int) -> int:
        """Resamples in which RD of key ``k`` was undefined."""
        return 0 if self.reps is None else int(np.isnan(self.reps["rd"][:, k]).sum())


def _by_cutoff(ns: tuple[int, ...], values: npt.NDArray[np.float64]) -> dict[int, float]:
    return dict(zip(ns, values.tolist(), strict=True))


def _group_results(
    x: npt.NDArray[np.float64],
    keys: list[str],
    names: npt.NDArray[np.str_],
    members: list[npt.NDArray[np.intp]],
    order: list[int],
    protected: str,
    boot: _Replicates,
) -> dict[str, GroupMetrics]:
    """Every group's means with their CIs, protected group first."""
    means = np.vstack([x[idx].mean(axis=0) for idx in members])
    return {
        str(names[g]): GroupMetrics(
            name=str(names[g]),
            n_users=int(members[g].size),
            protected=bool(names[g] == protected),
            metrics={key: boot.group_estimate(means[g, k], g, k) for k, key in enumerate(keys)},
        )
        for g in order
    }


def _inter_bias_results(
    x: npt.NDArray[np.float64],
    keys: list[str],
    is_protected: npt.NDArray[np.bool_],
    coverage: npt.NDArray[np.float64],
    pvalues: npt.NDArray[np.float64],
    boot: _Replicates,
    jack: dict[str, list[npt.NDArray[np.float64]]],
) -> dict[str, InterBias]:
    """RD, NRD and IB of every key (``coverage``: IC at each key's cut-off), each with the
    BCa interval of its replicates and its leave-one-out values ``jack[name]``
    (:mod:`._interbias_interval`), and each corrected by its jackknife bias."""
    pg, ug = x[is_protected].mean(axis=0), x[~is_protected].mean(axis=0)
    rd = relative_difference(ug, pg)
    nrd = normalized_relative_difference(rd)
    ib = inter_bias(nrd, coverage)
    adjusted = holm(pvalues)

    def corrected(name: str, value: float, k: int, low: float) -> float:
        return jackknife_bias_corrected(value, [j[:, k] for j in jack[name]], support=(low, 1))

    out = {}
    for k, key in enumerate(keys):
        metric, c = key.split("@")
        out[key] = InterBias(
            metric=metric,
            n=int(c),
            protected_mean=float(pg[k]),
            unprotected_mean=float(ug[k]),
            rd=boot.bca_estimate(rd[k], "rd", k, jack["rd"]),
            nrd=boot.bca_estimate(nrd[k], "nrd", k, jack["nrd"]),
            ib=boot.bca_estimate(ib[k], "ib", k, jack["ib"]),
            pvalue=float(pvalues[k]),
            pvalue_holm=float(adjusted[k]),
            undefined_reason=UNDEFINED_RD_REASON if np.isnan(rd[k]) else None,
            n_undefined_replicates=boot.n_undefined(k),
            rd_bias_corrected=corrected("rd", rd[k], k, -1.0),
            nrd_bias_corrected=corrected("nrd", nrd[k], k, 0.0),
            ib_bias_corrected=corrected("ib", ib[k], k, 0.0),
        )
    return out


def _coverage_results(
    ic: npt.NDArray[np.float64], ns: tuple[int, ...], resampled: bool, boot: _Replicates
) -> dict[int, Estimate]:
    """IC@N: with its bootstrap CI when ``resampled``, else held fixed (no CI)."""
    if resampled:
        return {c: boot.estimate(ic[j], "ic", j) for j, c in enumerate(ns)}
    fixed = ConfidenceInterval(np.nan, np.nan, boot.confidence_level, COVERAGE_FIXED)
    return {c: Estimate(float(ic[j]), fixed) for j, c in enumerate(ns)}


def _popularity_figures(
    lists: TopNLists, pop: npt.NDArray[np.float64] | None, head: npt.NDArray[np.bool_] | None,
    ns: tuple[int, ...],
) -> tuple[PopularityProfile | None, dict[int, float] | None, dict[int, float] | None,
           dict[int, float] | None]:
    """Profile, ARP@N, normalised ARP@N and long-tail share@N (all ``None`` without
    train); the long tail is everything outside ``head``, the popularity metrics' head."""
    if pop is None or head is None:
        return None, None, None, None
    profile = popularity_profile(pop)
    top = pop.max()
    scaled = pop / top if top > 0 else pop
    in_tail = (~head).astype(np.float64)
    return (
        profile,
        _by_cutoff(ns, average_popularity(lists.items, pop, n=ns)),
        _by_cutoff(ns, average_popularity(lists.items, scaled, n=ns)),
        _by_cutoff(ns, average_popularity(lists.items, in_tail, n=ns)),
    )


def _popularity_results(
    pop: _PopularityReplicates | None,
    inp: _Inputs,
    names: npt.NDArray[np.str_],
    order: list[int],
    boot: _Replicates,
) -> PopularityBias | None:
    """The popularity-bias metrics overall and per group with their CIs (None: not computed)."""
    if pop is None or inp.popularity_source is None:
        return None
    return PopularityBias(
        n_head_items=int(inp.popularity_source.is_head.sum()),
        n_train_users=inp.popularity_source.n_train_users,
        popularity_grouping=inp.popularity_source.grouping,
        ci_rule=CI_RULE,
        **pop.summaries(boot.rule_estimate, [str(name) for name in names], order),
    )


def _per_user_table(
    lists: TopNLists, groups: npt.NDArray[np.str_], keys: list[str],
    x: npt.NDArray[np.float64], pop: _PopularityReplicates | None,
) -> pd.DataFrame:
    """``user_id, group, n_relevant`` and every ``<metric>@<N>`` of each evaluated user;
    with the popularity-bias metrics (``pop``) also the user's ARP/APLT/ACLT/novelty at
    every cut-off, profile figures and popularity group."""
    columns: dict[str, npt.ArrayLike] = {
        "user_id": lists.user_ids.to_numpy(), "group": groups, "n_relevant": lists.n_relevant,
    }
    columns |= {key: x[:, k] for k, key in enumerate(keys)}
    if pop is not None:
        columns |= pop.everyone.per_user_columns(pop.labels)
    return pd.DataFrame(columns)
