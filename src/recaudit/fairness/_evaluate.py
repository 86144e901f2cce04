"""The model-agnostic inter-bias evaluation: group metrics, coverage, RD/NRD/IB, CIs.

:func:`evaluate` takes any recommender's top-N lists, the held-out test items and a
users table with one or more categorical attributes, and reports per-group and
overall top-N metrics, item coverage, popularity and exposure figures, and RD, NRD
and IB (Chizari, Tajfar & Moreno-García 2025) with user-level uncertainty:

- a stratified (by group) user-level bootstrap gives percentile CIs of every group
  mean, overall mean, IC, RD, NRD and IB; each resample is a multinomial weight
  vector over users, so all statistics of a resample come from matrix products;
- a permutation test of the group gap (protected labels shuffled over users) gives a
  +1-corrected Monte-Carlo p-value per metric and cut-off, Holm-adjusted over all of
  them.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from .._io import plain
from .._stats import (
    ConfidenceInterval,
    Estimate,
    as_generator,
    bootstrap_weights,
    holm,
    monte_carlo_pvalue,
    percentile_interval,
)
from ..exceptions import InputError
from ._exposure import (
    PopularityProfile,
    _coverage_replicates,
    average_popularity,
    exposure_gini,
    item_coverage,
    popularity_profile,
)
from ._interbias import (
    UNDEFINED_RD_REASON,
    inter_bias,
    normalized_relative_difference,
    relative_difference,
)
from ._metrics import (
    METRICS,
    TopNLists,
    _columns_iv,
    _n_iv,
    _union_index,
    build_top_n,
    ranking_metrics,
)

__all__ = ["FairnessEvaluation", "GroupMetrics", "InterBias", "evaluate"]

GROUP_SEPARATOR = " & "

ATTRIBUTE_MSG = (
    "`attribute` must be a column name or a non-empty list of column names, got {value!r}"
)
USERS_DUPLICATE_MSG = "`users` has duplicated user_id {user!r} at row {row}"
ATTRIBUTE_NAN_MSG = "`users` column `{column}` is missing for user_id {user!r} (row {row})"
PROTECTED_ARITY_MSG = "`protected` must give one value per attribute {attributes}, got {value!r}"
PROTECTED_ABSENT_MSG = "protected group {group!r} has no evaluated user (groups present: {present})"
NO_UNPROTECTED_MSG = "every evaluated user is in the protected group {group!r}: nothing to compare"
SMALL_GROUP_MSG = (
    "group {group!r} has {size} evaluated users, fewer than `min_group_size` = {minimum}"
)
CATALOG_BOTH_MSG = "give the catalog as `items` or as `n_items`, not both"
ITEMS_DUPLICATE_MSG = "`items` has duplicated item_id {item!r} at row {row}"
TRAIN_ITEM_MSG = "`train` has item_id {item!r} (row {row}) that is not in the item catalog `items`"
N_ITEMS_SMALL_MSG = (
    "`n_items` = {n_items} is smaller than the {seen} distinct items in recs/test/train"
)
POSITIVE_INT_MSG = "`{name}` must be an integer >= {minimum}, got {value!r}"
CONFIDENCE_MSG = "`confidence_level` must be in (0, 1), got {value!r}"
NO_EVALUATED_MSG = "no user has a test item: nothing to evaluate"
COVERAGE_FIXED = "held fixed (resample_coverage=False)"
NO_BOOT = "not computed (n_boot=0)"


@dataclass(frozen=True)
class GroupMetrics:
    """Mean top-N metrics of one group of users.

    Attributes
    ----------
    name : str
        Group name: the attribute value, or the values joined by ``" & "`` for an
        intersection of attributes.
    n_users : int
        Evaluated users (with at least one test item) in the group.
    protected : bool
        Whether this is the protected group.
    metrics : Mapping[str, Estimate]
        ``"<metric>@<N>"`` -> mean with its bootstrap CI.
    """

    name: str
    n_users: int
    protected: bool
    metrics: Mapping[str, Estimate]


@dataclass(frozen=True)
class InterBias:
    """RD, NRD and IB of one metric at one cut-off, with CIs and the gap test.

    Attributes
    ----------
    metric : str
        One of ``ndcg, precision, recall, hit, mrr``.
    n : int
        Cut-off.
    protected_mean, unprotected_mean : float
        ``M_PG`` and ``M_UG`` (the unprotected side pools every non-protected group).
    rd, nrd, ib : Estimate
        Point estimates with percentile bootstrap CIs; ``nan`` when undefined.
    pvalue : float
        Permutation p-value of ``|M_UG - M_PG|`` (two-sided, +1 corrected).
    pvalue_holm : float
        Holm-adjusted over every metric and cut-off of the evaluation.
    undefined_reason : str or None
        Why RD/NRD/IB are undefined (both means 0), else ``None``.
    n_undefined_replicates : int
        Bootstrap resamples in which RD was undefined (dropped from the CI).
    """

    metric: str
    n: int
    protected_mean: float
    unprotected_mean: float
    rd: Estimate
    nrd: Estimate
    ib: Estimate
    pvalue: float
    pvalue_holm: float
    undefined_reason: str | None
    n_undefined_replicates: int


@dataclass(frozen=True, eq=False)
class FairnessEvaluation:
    """Result of :func:`evaluate`.

    Attributes
    ----------
    attributes : tuple of str
        The attribute columns forming the groups.
    protected : str
        Name of the protected group.
    unprotected : tuple of str
        Names of the other groups (pooled as ``UG`` for RD).
    n : tuple of int
        Cut-offs, ascending.
    groups : Mapping[str, GroupMetrics]
        Every group, protected first.
    overall : Mapping[str, Estimate]
        ``"<metric>@<N>"`` -> mean over all evaluated users.
    inter_bias : Mapping[str, InterBias]
        ``"<metric>@<N>"`` -> RD, NRD, IB and the gap test.
    item_coverage : Mapping[int, Estimate]
        IC@N of the evaluated users' lists, with its bootstrap CI.
    exposure_gini : Mapping[int, float]
        Gini index of item exposure at N over the catalog.
    avg_popularity, avg_popularity_normalized, long_tail_share : Mapping[int, float] or None
        ARP@N in training interactions, ARP@N of popularity / max popularity, and the
        share of recommended slots holding long-tail items; ``None`` without ``train``.
    popularity : PopularityProfile or None
        Long-tail profile of training popularity over the catalog.
    n_users : int
        Evaluated users (in ``users`` and with at least one test item).
    n_users_excluded : int
        Users of ``users`` without test items (excluded from every figure).
    n_users_without_recs : int
        Evaluated users with no row in ``recs`` (scored 0, listed in ``per_user``).
    n_items : int
        Catalog size ``|I|``.
    catalog_source : str
        ``"items"``, ``"n_items"`` or ``"observed"`` (union of items in recs, test and
        train when no catalog is given).
    n_boot, n_resamples : int
        Bootstrap resamples and permutations (0 = not computed, bounds/p are nan).
    confidence_level : float
        Of every CI.
    min_group_size : int
        The minimum group size that was enforced.
    resample_coverage : bool
        Whether IC was recomputed on each bootstrap resample (else held fixed).
    per_user : pandas.DataFrame
        One row per evaluated user: ``user_id``, ``group``, ``n_relevant`` and every
        ``<metric>@<N>``.
    """

    attributes: tuple[str, ...]
    protected: str
    unprotected: tuple[str, ...]
    n: tuple[int, ...]
    groups: Mapping[str, GroupMetrics]
    overall: Mapping[str, Estimate]
    inter_bias: Mapping[str, InterBias]
    item_coverage: Mapping[int, Estimate]
    exposure_gini: Mapping[int, float]
    avg_popularity: Mapping[int, float] | None
    avg_popularity_normalized: Mapping[int, float] | None
    long_tail_share: Mapping[int, float] | None
    popularity: PopularityProfile | None
    n_users: int
    n_users_excluded: int
    n_users_without_recs: int
    n_items: int
    catalog_source: str
    n_boot: int
    n_resamples: int
    confidence_level: float
    min_group_size: int
    resample_coverage: bool
    per_user: pd.DataFrame

    def to_dict(self) -> dict[str, Any]:
        """Every figure as plain JSON-ready values (``nan`` kept; the CLI writes null)."""
        out: dict[str, Any] = {
            "attribute": list(self.attributes),
            "protected": self.protected,
            "unprotected": list(self.unprotected),
            "n": list(self.n),
            "n_users": self.n_users,
            "n_users_excluded": self.n_users_excluded,
            "n_users_without_recs": self.n_users_without_recs,
            "n_items": self.n_items,
            "catalog_source": self.catalog_source,
            "groups": {
                name: {"n_users": g.n_users, "protected": g.protected}
                | {key: est.to_dict() for key, est in g.metrics.items()}
                for name, g in self.groups.items()
            },
            "overall": {key: est.to_dict() for key, est in self.overall.items()},
        }
        for c in self.n:
            out[f"item_coverage@{c}"] = self.item_coverage[c].to_dict()
            out[f"gini_exposure@{c}"] = self.exposure_gini[c]
            if self.avg_popularity is not None:
                out[f"avg_popularity@{c}"] = self.avg_popularity[c]
            if self.avg_popularity_normalized is not None:
                out[f"avg_popularity_normalized@{c}"] = self.avg_popularity_normalized[c]
            if self.long_tail_share is not None:
                out[f"long_tail_share@{c}"] = self.long_tail_share[c]
        out["popularity"] = None if self.popularity is None else self.popularity.to_dict()
        out["rd"], out["nrd"], out["ib"] = {}, {}, {}
        for key, ib in self.inter_bias.items():
            flags = {
                "undefined": ib.undefined_reason,
                "n_undefined_replicates": ib.n_undefined_replicates,
            }
            out["rd"][key] = (
                ib.rd.to_dict()
                | {
                    "pvalue": ib.pvalue,
                    "pvalue_holm": ib.pvalue_holm,
                    "protected_mean": ib.protected_mean,
                    "unprotected_mean": ib.unprotected_mean,
                }
                | flags
            )
            out["nrd"][key] = ib.nrd.to_dict() | flags
            out["ib"][key] = ib.ib.to_dict() | flags
        out["settings"] = {
            "n_boot": self.n_boot,
            "n_resamples": self.n_resamples,
            "confidence_level": self.confidence_level,
            "min_group_size": self.min_group_size,
            "resample_coverage": self.resample_coverage,
            "ci_method": "percentile bootstrap over users, stratified by group",
            "pvalue_method": (
                "permutation of protected labels over users, |M_UG - M_PG|, "
                "(1 + #{T_b >= T}) / (B + 1), Holm over all metrics and cut-offs"
            ),
        }
        return out

    def to_dataframe(self) -> pd.DataFrame:
        """A tidy table: one row per (quantity, group, metric, n).

        Columns ``quantity`` (``mean``, ``overall``, ``rd``, ``nrd``, ``ib``,
        ``item_coverage``, ``gini_exposure``, ``avg_popularity``,
        ``avg_popularity_normalized``, ``long_tail_share``), ``group``, ``metric``,
        ``n``, ``value``, ``ci_low``, ``ci_high``, ``pvalue``, ``pvalue_holm``.
        """
        rows: list[dict[str, Any]] = []

        def add(
            quantity: str,
            group: str | None,
            metric: str | None,
            c: int,
            est: Estimate | float,
            **extra: float,
        ) -> None:
            if isinstance(est, Estimate):
                values = {"value": est.value, "ci_low": est.ci.low, "ci_high": est.ci.high}
            else:
                values = {"value": est, "ci_low": np.nan, "ci_high": np.nan}
            rows.append(
                {"quantity": quantity, "group": group, "metric": metric, "n": c} | values | extra
            )

        for g in self.groups.values():
            for key, est in g.metrics.items():
                metric, cut = key.split("@")
                add("mean", g.name, metric, int(cut), est)
        for key, est in self.overall.items():
            metric, cut = key.split("@")
            add("overall", None, metric, int(cut), est)
        for ib in self.inter_bias.values():
            add("rd", None, ib.metric, ib.n, ib.rd, pvalue=ib.pvalue, pvalue_holm=ib.pvalue_holm)
            add("nrd", None, ib.metric, ib.n, ib.nrd)
            add("ib", None, ib.metric, ib.n, ib.ib)
        for c in self.n:
            add("item_coverage", None, None, c, self.item_coverage[c])
            add("gini_exposure", None, None, c, self.exposure_gini[c])
            for name in ("avg_popularity", "avg_popularity_normalized", "long_tail_share"):
                table = getattr(self, name)
                if table is not None:
                    add(name, None, None, c, table[c])
        columns = [
            "quantity",
            "group",
            "metric",
            "n",
            "value",
            "ci_low",
            "ci_high",
            "pvalue",
            "pvalue_holm",
        ]
        return pd.DataFrame(rows).reindex(columns=columns)


@dataclass(frozen=True)
class _Inputs:
    lists: TopNLists
    groups: npt.NDArray[np.str_]
    attributes: tuple[str, ...]
    protected: str
    ns: tuple[int, ...]
    n_items: int
    catalog_source: str
    popularity: npt.NDArray[np.float64] | None
    n_users_excluded: int
    n_boot: int
    n_resamples: int
    min_group_size: int
    confidence_level: float
    resample_coverage: bool
    rng: np.random.Generator


def _int_iv(value: Any, name: str, minimum: int) -> int:
    if not isinstance(value, int | np.integer) or isinstance(value, bool) or value < minimum:
        raise InputError(POSITIVE_INT_MSG.format(name=name, minimum=minimum, value=value))
    return int(value)


def _group_labels(users: pd.DataFrame, attributes: tuple[str, ...]) -> pd.Series:
    for column in attributes:
        isna = users[column].isna().to_numpy()
        if isna.any():
            pos = int(np.argmax(isna))
            raise InputError(
                ATTRIBUTE_NAN_MSG.format(
                    column=column, user=plain(users["user_id"].iloc[pos]), row=pos + 1
                )
            )
    labels = users[attributes[0]].astype(str)
    for column in attributes[1:]:
        labels = labels + GROUP_SEPARATOR + users[column].astype(str)
    return labels


def _protected_iv(protected: Hashable | Sequence[Hashable], attributes: tuple[str, ...]) -> str:
    values: tuple[Any, ...]
    if isinstance(protected, list | tuple):
        values = tuple(protected)
    elif isinstance(protected, str) and len(attributes) > 1:
        values = tuple(protected.split(GROUP_SEPARATOR))
    else:
        values = (protected,)
    if len(values) != len(attributes):
        raise InputError(
            PROTECTED_ARITY_MSG.format(attributes=list(attributes), value=plain(protected))
        )
    return GROUP_SEPARATOR.join(str(v) for v in values)


def _catalog_iv(
    recs: pd.DataFrame,
    test: pd.DataFrame,
    train: pd.DataFrame | None,
    items: pd.DataFrame | None,
    n_items: int | None,
) -> tuple[pd.Index, int, str]:
    if items is not None and n_items is not None:
        raise InputError(CATALOG_BOTH_MSG)
    if items is not None:
        _columns_iv(items, "items", ("item_id",))
        dup = items["item_id"].duplicated().to_numpy()
        if dup.any():
            pos = int(np.argmax(dup))
            raise InputError(
                ITEMS_DUPLICATE_MSG.format(item=plain(items["item_id"].iloc[pos]), row=pos + 1)
            )
        index = pd.Index(items["item_id"].to_numpy())
        return index, len(index), "items"
    tables = [recs, test] if train is None else [recs, test, train]
    index = _union_index([t["item_id"].to_numpy() for t in tables])
    if n_items is None:
        return index, len(index), "observed"
    size = _int_iv(n_items, "n_items", 1)
    if size < len(index):
        raise InputError(N_ITEMS_SMALL_MSG.format(n_items=size, seen=len(index)))
    return index, size, "n_items"


def _evaluate_iv(
    recs: pd.DataFrame,
    test: pd.DataFrame,
    users: pd.DataFrame,
    attribute: str | Sequence[str],
    protected: Hashable | Sequence[Hashable],
    n: int | Sequence[int],
    n_items: int | None,
    items: pd.DataFrame | None,
    train: pd.DataFrame | None,
    n_boot: int,
    n_resamples: int,
    min_group_size: int,
    confidence_level: float,
    resample_coverage: bool,
    rng: np.random.Generator | int | None,
) -> _Inputs:
    ns = _n_iv(n)
    attributes = (attribute,) if isinstance(attribute, str) else tuple(attribute)
    if not attributes or not all(isinstance(a, str) for a in attributes):
        raise InputError(ATTRIBUTE_MSG.format(value=attribute))
    _columns_iv(users, "users", ("user_id",))
    missing = [a for a in attributes if a not in users.columns]
    if missing:
        raise InputError(
            f"`users` must have the attribute columns {list(attributes)}; missing {missing}"
        )
    dup = users["user_id"].duplicated().to_numpy()
    if dup.any():
        pos = int(np.argmax(dup))
        raise InputError(
            USERS_DUPLICATE_MSG.format(user=plain(users["user_id"].iloc[pos]), row=pos + 1)
        )
    labels = _group_labels(users, attributes)
    protected_name = _protected_iv(protected, attributes)
    n_boot = _int_iv(n_boot, "n_boot", 0)
    n_resamples = _int_iv(n_resamples, "n_resamples", 0)
    min_group_size = _int_iv(min_group_size, "min_group_size", 1)
    if not (isinstance(confidence_level, float | int) and 0 < confidence_level < 1):
        raise InputError(CONFIDENCE_MSG.format(value=confidence_level))
    generator = as_generator(rng)

    _columns_iv(recs, "recs", ("user_id", "item_id", "rank"))
    _columns_iv(test, "test", ("user_id", "item_id"))
    if train is not None:
        _columns_iv(train, "train", ("item_id",))
    item_index, size, source = _catalog_iv(recs, test, train, items, n_items)
    lists = build_top_n(
        recs,
        test,
        user_index=pd.Index(users["user_id"].to_numpy()),
        item_index=item_index,
        n_max=ns[-1],
    )
    popularity = None
    if train is not None:
        codes = item_index.get_indexer(train["item_id"].to_numpy())
        if (codes < 0).any():
            pos = int(np.argmax(codes < 0))
            raise InputError(
                TRAIN_ITEM_MSG.format(item=plain(train["item_id"].iloc[pos]), row=pos + 1)
            )
        popularity = np.bincount(codes, minlength=size).astype(np.float64)

    evaluated = lists.n_relevant > 0
    if not evaluated.any():
        raise InputError(NO_EVALUATED_MSG)
    groups = labels.to_numpy()[evaluated].astype(str)
    names, sizes = np.unique(groups, return_counts=True)
    if protected_name not in names:
        raise InputError(
            PROTECTED_ABSENT_MSG.format(group=plain(protected_name), present=names.tolist())
        )
    if names.size < 2:
        raise InputError(NO_UNPROTECTED_MSG.format(group=plain(protected_name)))
    for name, count in zip(names, sizes, strict=True):
        if count < min_group_size:
            raise InputError(
                SMALL_GROUP_MSG.format(group=plain(name), size=count, minimum=min_group_size)
            )
    return _Inputs(
        lists=lists.subset(evaluated),
        groups=groups,
        attributes=attributes,
        protected=protected_name,
        ns=ns,
        n_items=size,
        catalog_source=source,
        popularity=popularity,
        n_users_excluded=int((~evaluated).sum()),
        n_boot=n_boot,
        n_resamples=n_resamples,
        min_group_size=min_group_size,
        confidence_level=float(confidence_level),
        resample_coverage=bool(resample_coverage),
        rng=generator,
    )


def evaluate(
    recs: pd.DataFrame,
    test: pd.DataFrame,
    users: pd.DataFrame,
    *,
    attribute: str | Sequence[str],
    protected: Hashable | Sequence[Hashable],
    n: int | Sequence[int] = (5, 10, 15),
    n_items: int | None = None,
    items: pd.DataFrame | None = None,
    train: pd.DataFrame | None = None,
    n_boot: int = 1000,
    n_resamples: int = 999,
    min_group_size: int = 20,
    confidence_level: float = 0.95,
    resample_coverage: bool = False,
    rng: np.random.Generator | int | None = None,
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
    (``n_boot`` resamples, percentile CIs) for every group and overall mean, IC, RD,
    NRD and IB -- by default with IC held at its observed value, because a bootstrap
    resample holds only ~63 % distinct users and its coverage is biased low (see
    ``resample_coverage``) -- and a permutation test of ``|M_UG - M_PG|``
    (``n_resamples`` shuffles of the protected label over users, +1-corrected
    p-value), Holm-adjusted over all metrics and cut-offs.

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
    n : int or sequence of int
        Cut-offs.
    n_items, items : int or pandas.DataFrame, optional
        The catalog, as a size or as a table with ``item_id`` (then every item of
        recs/test/train must be in it). Neither: the items seen in recs, test and
        train (``catalog_source="observed"``).
    train : pandas.DataFrame, optional
        Training interactions (``item_id`` column, one row per interaction): item
        popularity for ARP, the long-tail share and the popularity profile.
    n_boot : int
        Bootstrap resamples (0 = no CIs).
    n_resamples : int
        Permutations for the gap test (0 = no p-values).
    min_group_size : int
        Every group needs at least this many evaluated users.
    confidence_level : float
        Of every CI.
    resample_coverage : bool
        Recompute IC on each bootstrap resample's lists (one sparse product per
        chunk) and use it in IB's CI, and report IC's percentile CI. Off by default:
        the union of the lists of a resample's distinct users is a subset of the
        observed union, so IC replicates are biased low (never above the estimate).
    rng : numpy.random.Generator or int, optional
        Source of randomness (an int seeds a new generator).

    Returns
    -------
    FairnessEvaluation

    Raises
    ------
    InputError
        On malformed tables (naming the column and row), unknown users or items,
        duplicated or gapped ranks, NaN attributes, an absent protected group, or a
        group smaller than ``min_group_size``.

    References
    ----------
    Chizari, N., Tajfar, K. & Moreno-García, M. N. (2025). Measuring Inter-Bias
    Effects and Fairness-Accuracy Trade-Offs in GNN-Based Recommender Systems.
    Future Internet 17(10), 461.
    """
    inp = _evaluate_iv(
        recs,
        test,
        users,
        attribute,
        protected,
        n,
        n_items,
        items,
        train,
        n_boot,
        n_resamples,
        min_group_size,
        confidence_level,
        resample_coverage,
        rng,
    )
    ns, lists = inp.ns, inp.lists
    values = ranking_metrics(lists.hits, lists.n_relevant, n=ns)
    keys = [f"{m}@{c}" for m in METRICS for c in ns]
    x = np.hstack([values[m] for m in METRICS])  # users x (metric-major) keys
    cut_of_key = np.tile(np.arange(len(ns)), len(METRICS))

    names, codes = np.unique(inp.groups, return_inverse=True)
    members = [np.flatnonzero(codes == g) for g in range(names.size)]
    is_protected = inp.groups == inp.protected

    group_means = np.vstack([x[idx].mean(axis=0) for idx in members])
    pg, ug = x[is_protected].mean(axis=0), x[~is_protected].mean(axis=0)
    ic = item_coverage(lists.items, n_items=inp.n_items, n=ns)
    rd = relative_difference(ug, pg)
    nrd = normalized_relative_difference(rd)
    ib = inter_bias(nrd, ic[cut_of_key])

    boot = _bootstrap(x, lists, members, is_protected, ns, cut_of_key, ic, inp)
    pvalues = _permutation_pvalues(x, is_protected, inp)
    adjusted = holm(pvalues)

    def est(value: float, reps: npt.NDArray[np.float64] | None) -> Estimate:
        if reps is None:
            return Estimate(
                float(value), ConfidenceInterval(np.nan, np.nan, inp.confidence_level, NO_BOOT)
            )
        return Estimate(
            float(value), percentile_interval(reps, confidence_level=inp.confidence_level)
        )

    def rep(name: str, k: int) -> npt.NDArray[np.float64] | None:
        return None if boot is None else boot[name][:, k]

    order = [int(np.flatnonzero(names == inp.protected)[0])] + [
        g for g in range(names.size) if names[g] != inp.protected
    ]
    groups = {
        str(names[g]): GroupMetrics(
            name=str(names[g]),
            n_users=int(members[g].size),
            protected=bool(names[g] == inp.protected),
            metrics={
                key: est(group_means[g, k], None if boot is None else boot["groups"][:, g, k])
                for k, key in enumerate(keys)
            },
        )
        for g in order
    }
    overall = {key: est(x[:, k].mean(), rep("overall", k)) for k, key in enumerate(keys)}
    gaps = {}
    for k, key in enumerate(keys):
        metric, c = key.split("@")
        undefined = bool(np.isnan(rd[k]))
        gaps[key] = InterBias(
            metric=metric,
            n=int(c),
            protected_mean=float(pg[k]),
            unprotected_mean=float(ug[k]),
            rd=est(rd[k], rep("rd", k)),
            nrd=est(nrd[k], rep("nrd", k)),
            ib=est(ib[k], rep("ib", k)),
            pvalue=float(pvalues[k]),
            pvalue_holm=float(adjusted[k]),
            undefined_reason=UNDEFINED_RD_REASON if undefined else None,
            n_undefined_replicates=0 if boot is None else int(np.isnan(boot["rd"][:, k]).sum()),
        )

    pop = inp.popularity
    profile = None if pop is None else popularity_profile(pop)
    arp = arp_norm = tail = None
    if pop is not None and profile is not None:
        arp = dict(zip(ns, average_popularity(lists.items, pop, n=ns).tolist(), strict=True))
        top = pop.max()
        scaled = pop / top if top > 0 else pop
        arp_norm = dict(
            zip(ns, average_popularity(lists.items, scaled, n=ns).tolist(), strict=True)
        )
        in_tail = (~profile.is_head).astype(np.float64)
        tail = dict(zip(ns, average_popularity(lists.items, in_tail, n=ns).tolist(), strict=True))

    per_user = pd.DataFrame(
        {"user_id": lists.user_ids.to_numpy(), "group": inp.groups, "n_relevant": lists.n_relevant}
    )
    for k, key in enumerate(keys):
        per_user[key] = x[:, k]
    return FairnessEvaluation(
        attributes=inp.attributes,
        protected=inp.protected,
        unprotected=tuple(str(names[g]) for g in order[1:]),
        n=ns,
        groups=groups,
        overall=overall,
        inter_bias=gaps,
        item_coverage={
            c: est(ic[j], rep("ic", j))
            if inp.resample_coverage
            else Estimate(
                float(ic[j]),
                ConfidenceInterval(np.nan, np.nan, inp.confidence_level, COVERAGE_FIXED),
            )
            for j, c in enumerate(ns)
        },
        exposure_gini=dict(
            zip(ns, exposure_gini(lists.items, n_items=inp.n_items, n=ns).tolist(), strict=True)
        ),
        avg_popularity=arp,
        avg_popularity_normalized=arp_norm,
        long_tail_share=tail,
        popularity=profile,
        n_users=int(lists.n_relevant.size),
        n_users_excluded=inp.n_users_excluded,
        n_users_without_recs=int((~lists.has_list).sum()),
        n_items=inp.n_items,
        catalog_source=inp.catalog_source,
        n_boot=inp.n_boot,
        n_resamples=inp.n_resamples,
        confidence_level=inp.confidence_level,
        min_group_size=inp.min_group_size,
        resample_coverage=inp.resample_coverage,
        per_user=per_user,
    )


def _bootstrap(
    x: npt.NDArray[np.float64],
    lists: TopNLists,
    members: list[npt.NDArray[np.intp]],
    is_protected: npt.NDArray[np.bool_],
    ns: tuple[int, ...],
    cut_of_key: npt.NDArray[np.intp],
    ic: npt.NDArray[np.float64],
    inp: _Inputs,
) -> dict[str, npt.NDArray[np.float64]] | None:
    """Replicates of every statistic under a user bootstrap stratified by group.

    Group sizes are fixed by the stratification, so a group mean of a resample is
    ``w[:, g] @ x[g] / n_g`` -- one matrix product per group and chunk of resamples.
    IC is recomputed on each resample's lists only with ``resample_coverage``;
    otherwise it is held at its observed value ``ic`` (and has no replicates).
    """
    if inp.n_boot == 0:
        return None
    strata = np.empty(x.shape[0], dtype=np.intp)
    for g, idx in enumerate(members):
        strata[idx] = g
    sizes = np.array([idx.size for idx in members], dtype=np.float64)
    prot = np.array([bool(is_protected[idx[0]]) for idx in members])
    chunks: dict[str, list[npt.NDArray[np.float64]]] = {k: [] for k in ("groups", "overall", "ic")}
    for w in bootstrap_weights(x.shape[0], inp.n_boot, inp.rng, strata=strata):
        wf = w.astype(np.float64)
        sums = np.stack([wf[:, idx] @ x[idx] for idx in members], axis=1)  # b x G x K
        chunks["groups"].append(sums / sizes[None, :, None])
        chunks["overall"].append(sums.sum(axis=1) / sizes.sum())
        if inp.resample_coverage:
            chunks["ic"].append(_coverage_replicates(lists.items, inp.n_items, ns, w))
        else:
            chunks["ic"].append(np.full((w.shape[0], len(ns)), np.nan))
    out = {k: np.concatenate(v) for k, v in chunks.items()}
    coverage = out["ic"] if inp.resample_coverage else np.broadcast_to(ic, out["ic"].shape)
    all_sums = out["groups"] * sizes[None, :, None]
    pg = all_sums[:, prot].sum(axis=1) / sizes[prot].sum()
    ug = all_sums[:, ~prot].sum(axis=1) / sizes[~prot].sum()
    out["rd"] = relative_difference(ug, pg)
    out["nrd"] = normalized_relative_difference(out["rd"])
    out["ib"] = inter_bias(out["nrd"], coverage[:, cut_of_key])
    return out


def _permutation_pvalues(
    x: npt.NDArray[np.float64], is_protected: npt.NDArray[np.bool_], inp: _Inputs
) -> npt.NDArray[np.float64]:
    """Two-sided permutation p-value of ``|mean_UG - mean_PG|`` for every column.

    Under the null of exchangeable protected labels, shuffling them over users leaves
    the group sizes fixed; a shuffle's protected sum is ``P @ x`` with ``P`` the
    shuffled 0/1 label rows, so a chunk of shuffles is one matrix product.
    """
    k = x.shape[1]
    if inp.n_resamples == 0:
        return np.full(k, np.nan)
    n_users = x.shape[0]
    n_pg = int(is_protected.sum())
    n_ug = n_users - n_pg
    total = x.sum(axis=0)
    observed = np.abs(x[~is_protected].mean(axis=0) - x[is_protected].mean(axis=0))
    chunk = max(1, min(inp.n_resamples, 4_000_000 // max(n_users, 1)))
    null = []
    done = 0
    labels = is_protected.astype(np.float64)
    while done < inp.n_resamples:
        b = min(chunk, inp.n_resamples - done)
        p = inp.rng.permuted(np.tile(labels, (b, 1)), axis=1)
        s_pg = p @ x
        null.append(np.abs((total - s_pg) / n_ug - s_pg / n_pg))
        done += b
    t = np.concatenate(null)
    return np.array([monte_carlo_pvalue(float(observed[j]), t[:, j]) for j in range(k)])
