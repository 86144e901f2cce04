"""The results of :func:`~recaudit.fairness.evaluate` and their JSON form.

:class:`FairnessEvaluation` (with one :class:`GroupMetrics` per group and one
:class:`InterBias` per metric and cut-off) writes itself with ``to_dict()`` -- the
JSON of ``recaudit fairness evaluate --json`` and of each model's ``evaluation`` in
a study's ``results.json`` -- and reads that JSON back with ``from_dict()``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .._records import find_key, need_key, to_bool, to_float, to_int
from .._stats import Estimate
from ..exceptions import InputError
from . import _from_json as js
from ._exposure import PopularityProfile
from ._interbias_interval import OLDER_INTER_BIAS_CI_RULE, interbias_method
from .popularity._result import PopularityBias

__all__ = ["FairnessEvaluation", "GroupMetrics", "InterBias", "PopularityBias"]

COVERAGE_FIXED = "held fixed (resample_coverage=False)"
NO_BOOT = "not computed (n_boot=0)"
CI_METHOD = (
    "bootstrap over users, stratified by group: percentile intervals of the means and "
    "item coverage; rd, nrd and ib by the rule of inter_bias_ci_rule (bca: BCa, its "
    "acceleration from a jackknife over users within each group); popularity_bias: the "
    "rule of each figure is its ci_rule"
)
PVALUE_METHOD = (
    "permutation of protected labels over users, |M_UG - M_PG|, "
    "(1 + #{T_b >= T}) / (B + 1), Holm over all metrics and cut-offs"
)
GROUPS_MSG = "{where}: `groups` must map at least two group values to metrics"
OBJECT_MSG = "{where} must be a JSON object"
COVERAGE_MSG = "{where}: missing key `item_coverage@<N>`; it is written by {command}"
EVALUATION_WHERE = "fairness result"
_POPULARITY_FIGURES = ("avg_popularity", "avg_popularity_normalized", "long_tail_share")


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

    def to_dict(self) -> dict[str, Any]:
        """``{"n_users", "protected", "<metric>@<N>": {value, ci_low, ci_high}, ...}``."""
        return {"n_users": self.n_users, "protected": self.protected} | {
            key: est.to_dict() for key, est in self.metrics.items()
        }

    @classmethod
    def from_dict(
        cls, name: str, obj: Any, *, protected: bool, level: float, missing: str,
        where: str = EVALUATION_WHERE,
    ) -> GroupMetrics:
        """Read :meth:`to_dict`'s JSON back (``protected`` when it holds no flag).

        ``level`` and ``missing`` are the confidence level and the method name of
        bounds the JSON does not hold (see :meth:`FairnessEvaluation.from_dict`).
        """
        where = f"{where}.groups.{name}"
        if not isinstance(obj, Mapping):
            raise InputError(OBJECT_MSG.format(where=where))
        flag = find_key(obj, "protected")
        return cls(
            name=str(name),
            n_users=js.whole(obj, "n_users", where),
            protected=protected if flag is None else to_bool(flag, "protected", where),
            metrics=_metric_section(obj, where, level, missing),
        )


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
        Point estimates with bootstrap CIs by the evaluation's ``inter_bias_ci_rule``
        (BCa since it was recorded); ``nan`` when undefined.
    pvalue : float
        Permutation p-value of ``|M_UG - M_PG|`` (two-sided, +1 corrected).
    pvalue_holm : float
        Holm-adjusted over every metric and cut-off of the evaluation.
    undefined_reason : str or None
        Why RD/NRD/IB are undefined (both means 0), else ``None``.
    n_undefined_replicates : int
        Bootstrap resamples in which RD was undefined (dropped from the CI).
    rd_bias_corrected, nrd_bias_corrected, ib_bias_corrected : float
        The estimates minus their jackknife estimate of bias over users within each
        group (:func:`~recaudit._stats.jackknife_bias_corrected`, clipped to the
        figure's range; JSON ``value_bias_corrected``). The plug-in RD is biased upward
        at small protected groups (+0.007 to +0.17 at 30 protected users beside 900,
        +0.001 to +0.05 at 100, docs/validation-fairness.md); the corrected value's bias
        was within 0.0075 there but for sparse metrics at 30 users (up to +0.018).
        ``nan`` when undefined or read from a JSON without it.
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
    rd_bias_corrected: float = np.nan
    nrd_bias_corrected: float = np.nan
    ib_bias_corrected: float = np.nan

    def to_dict(self) -> dict[str, dict[str, Any]]:
        """This key's entries of the ``rd``, ``nrd`` and ``ib`` sections of the JSON."""
        flags = {
            "undefined": self.undefined_reason,
            "n_undefined_replicates": self.n_undefined_replicates,
        }
        rd = self.rd.to_dict() | {"value_bias_corrected": self.rd_bias_corrected} | {
            "pvalue": self.pvalue,
            "pvalue_holm": self.pvalue_holm,
            "protected_mean": self.protected_mean,
            "unprotected_mean": self.unprotected_mean,
        }
        return {
            "rd": rd | flags,
            "nrd": self.nrd.to_dict() | {"value_bias_corrected": self.nrd_bias_corrected}
            | flags,
            "ib": self.ib.to_dict() | {"value_bias_corrected": self.ib_bias_corrected} | flags,
        }

    @classmethod
    def from_dict(
        cls, key: tuple[str, int], rd: Any, nrd: Any, ib: Any, *, level: float, missing: str,
        where: str = EVALUATION_WHERE, method: str = "percentile bootstrap",
    ) -> InterBias:
        """Read the ``rd``/``nrd``/``ib`` entries of one key back (``None`` = absent).

        An ``rd`` entry needs a ``pvalue`` (``null`` for none); ``pvalue_holm``, the
        group means and the flags may be absent (``nan``, ``None``, 0). ``method`` is
        the intervals' method (of the evaluation's ``inter_bias_ci_rule``).
        """
        metric, n = key
        where = f"{where}.rd.{metric}@{n}"
        entry = rd if isinstance(rd, Mapping) else {}
        pvalue = (to_float(need_key(entry, where, js.FAIRNESS_CMD, "pvalue"), "pvalue", where)
                  if rd is not None else np.nan)
        flags = next((e for e in (rd, nrd, ib) if isinstance(e, Mapping)), {})
        reason = find_key(flags, "undefined")
        replicates = find_key(flags, "n_undefined_replicates")

        def est(obj: Any) -> Estimate:
            return js.estimate(np.nan if obj is None else obj, where, level, missing,
                               method=method)

        def corrected(obj: Any) -> float:
            return to_float(find_key(obj, "value_bias_corrected"), "value_bias_corrected",
                            where) if isinstance(obj, Mapping) else np.nan

        return cls(
            metric=metric,
            n=n,
            protected_mean=to_float(find_key(entry, "protected_mean"), "protected_mean", where),
            unprotected_mean=to_float(find_key(entry, "unprotected_mean"), "unprotected_mean",
                                      where),
            rd=est(rd),
            nrd=est(nrd),
            ib=est(ib),
            pvalue=pvalue,
            pvalue_holm=to_float(find_key(entry, "pvalue_holm"), "pvalue_holm", where),
            undefined_reason=None if reason is None else str(reason),
            n_undefined_replicates=(0 if replicates is None else
                                    to_int(replicates, "n_undefined_replicates", where)),
            rd_bias_corrected=corrected(rd),
            nrd_bias_corrected=corrected(nrd),
            ib_bias_corrected=corrected(ib),
        )


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
    popularity_bias : PopularityBias or None
        ARP, APLT, ACLT, PopRSP, PopREO and novelty at every cut-off, overall and per
        group, with CIs; ``None`` without a ``train`` table with ``user_id`` (and when
        read from a JSON without them).
    popularity_bias_reason : str or None
        Why ``popularity_bias`` is ``None`` (``None`` when it is computed).
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
        train when no catalog is given); ``"unknown"`` when read from a JSON without it.
    n_boot, n_resamples : int
        Bootstrap resamples and permutations (0 = not computed, bounds/p are nan).
    confidence_level : float
        Of every CI.
    min_group_size : int
        The minimum group size that was enforced.
    resample_coverage : bool
        Whether IC was recomputed on each bootstrap resample (else held fixed).
    inter_bias_ci_rule : str
        The interval rule of RD, NRD and IB (``settings.inter_bias_ci_rule`` of the
        JSON): ``"bca"`` (:data:`~recaudit.fairness._interbias_interval.INTER_BIAS_CI_RULE`,
        what :func:`evaluate` uses) or ``"percentile"`` (a JSON written before the rule
        was recorded).
    per_user : pandas.DataFrame or None
        One row per evaluated user: ``user_id``, ``group``, ``n_relevant`` and every
        ``<metric>@<N>``; when ``popularity_bias`` is computed also the user's
        ``arp@<N>``, ``aplt@<N>``, ``aclt@<N>``, ``novelty@<N>``,
        ``profile_popularity``, ``profile_tail_share``, ``test_tail_share`` (``nan``
        where undefined: no list, no training or test item) and ``popularity_group``
        (the user's group in ``popularity_bias.user_popularity_groups``, ``None`` for a
        user without training items or when there are no groups). Each column's mean
        (over its defined values) is the overall figure of ``overall`` /
        ``popularity_bias``. ``None`` when read back by :meth:`from_dict` (the JSON
        holds no per-user rows).
    protocol : str
        The evaluation protocol: ``"full"`` (ranked over the whole catalog) or a
        sampled one (``"uni100"``, ``"pop100"``, ...; see
        :func:`~recaudit.fairness.parse_protocol`); ``"full"`` when read from a JSON
        without it.
    warnings : tuple of str
        What the reader must know to read the figures (a sampled protocol's warnings).
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
    popularity_bias: PopularityBias | None
    popularity_bias_reason: str | None
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
    per_user: pd.DataFrame | None
    protocol: str = "full"
    warnings: tuple[str, ...] = ()
    inter_bias_ci_rule: str = OLDER_INTER_BIAS_CI_RULE

    def to_dict(self) -> dict[str, Any]:
        """Every figure as plain JSON-ready values (``nan`` kept; the CLI writes null)."""
        out: dict[str, Any] = {
            "protocol": self.protocol,
            "attribute": list(self.attributes),
            "protected": self.protected,
            "unprotected": list(self.unprotected),
            "n": list(self.n),
            "n_users": self.n_users,
            "n_users_excluded": self.n_users_excluded,
            "n_users_without_recs": self.n_users_without_recs,
            "n_items": self.n_items,
            "catalog_source": self.catalog_source,
            "groups": {name: g.to_dict() for name, g in self.groups.items()},
            "overall": {key: est.to_dict() for key, est in self.overall.items()},
        }
        out |= self._figures_by_n()
        out["popularity"] = None if self.popularity is None else self.popularity.to_dict()
        out["popularity_bias"] = (
            None if self.popularity_bias is None else self.popularity_bias.to_dict()
        )
        out["popularity_bias_reason"] = self.popularity_bias_reason
        sections: dict[str, dict[str, Any]] = {"rd": {}, "nrd": {}, "ib": {}}
        for key, ib in self.inter_bias.items():
            for name, entry in ib.to_dict().items():
                sections[name][key] = entry
        out |= sections
        out["settings"] = {
            "n_boot": self.n_boot,
            "n_resamples": self.n_resamples,
            "confidence_level": self.confidence_level,
            "min_group_size": self.min_group_size,
            "resample_coverage": self.resample_coverage,
            "inter_bias_ci_rule": self.inter_bias_ci_rule,
            "ci_method": CI_METHOD,
            "pvalue_method": PVALUE_METHOD,
        }
        if self.warnings:
            out["warnings"] = list(self.warnings)
        return out

    def _figures_by_n(self) -> dict[str, Any]:
        """``item_coverage@N``, ``gini_exposure@N`` and the popularity figures."""
        out: dict[str, Any] = {}
        for c in self.n:
            if c in self.item_coverage:
                out[f"item_coverage@{c}"] = self.item_coverage[c].to_dict()
            if c in self.exposure_gini:
                out[f"gini_exposure@{c}"] = self.exposure_gini[c]
            for name in _POPULARITY_FIGURES:
                table = getattr(self, name)
                if table is not None and c in table:
                    out[f"{name}@{c}"] = table[c]
        return out

    @classmethod
    def from_dict(
        cls, obj: Mapping[str, Any], *, where: str = EVALUATION_WHERE
    ) -> FairnessEvaluation:
        """Read the JSON of :meth:`to_dict` back into a :class:`FairnessEvaluation`.

        Accepts everything the HTML report reads: keys compared case- and
        separator-insensitively, metric aliases (``hit_rate_10``, ``HR@10``),
        estimates as ``{value, ci_low, ci_high}``, ``{estimate, ci: [lo, hi]}`` or
        bare numbers, ``null`` as ``nan``, item coverage and average popularity at
        the top level or inside ``overall`` (``coverage@N``, ``ic@N``, ``arp@N``,
        ...), the protected group as ``protected``, ``protected_group`` or
        ``minority``, ``protocol`` (``"full"`` when absent) and ``warnings``.
        Required: ``groups`` (at least two, each with ``n_users``), ``overall``,
        ``item_coverage@<N>``, ``rd`` (each entry with ``pvalue``), ``nrd`` and
        ``ib``. What the JSON does not say is filled in: the cut-offs from the
        keys, ``unprotected`` from the groups, ``n_users`` as their sum, the
        settings as 0 resamples, level 0.95, ``min_group_size`` 1, the RD/NRD/IB
        interval rule ``"percentile"`` (what evaluations used before recording it); the
        ``per_user`` table (not in the JSON) is ``None`` and a popularity
        profile's per-item arrays are empty.

        Parameters
        ----------
        obj : mapping
            One evaluation's JSON.
        where : str
            Names ``obj`` in error messages.

        Returns
        -------
        FairnessEvaluation

        Raises
        ------
        InputError
            Naming the missing or malformed key and the command that writes it.
        """
        if not isinstance(obj, Mapping):
            raise InputError(OBJECT_MSG.format(where=where))
        settings = _settings_from(obj, where)
        missing = NO_BOOT if settings["n_boot"] == 0 else "percentile bootstrap"
        level = settings["confidence_level"]
        named = find_key(obj, "protected", "protected_group", "minority")
        groups = _groups_from(obj, where, None if named is None else str(named), level, missing)
        protected = (str(named) if named is not None
                     else next((g.name for g in groups.values() if g.protected), ""))
        overall_raw = need_key(obj, where, js.FAIRNESS_CMD, "overall")
        overall = _metric_section(overall_raw, f"{where}.overall", level, missing)
        coverage = _coverage_from(obj, overall_raw, where, level,
                                  missing if settings["resample_coverage"] else COVERAGE_FIXED)
        popularity = find_key(obj, "popularity")
        bias = find_key(obj, "popularity_bias")
        reason = find_key(obj, "popularity_bias_reason")
        unprotected = find_key(obj, "unprotected")
        n_users = find_key(obj, "n_users")
        return cls(
            attributes=_attributes_from(find_key(obj, "attribute", "attributes")),
            protected=protected,
            unprotected=tuple(
                str(g) for g in (unprotected if isinstance(unprotected, list)
                                 else [g for g in groups if g != protected])
            ),
            n=_cutoffs_from(obj, overall, coverage, where),
            groups=groups,
            overall=overall,
            inter_bias=_inter_bias_from(
                obj, where, level, missing,
                interbias_method(settings["inter_bias_ci_rule"],
                                 f"{where}.settings.inter_bias_ci_rule")),
            item_coverage=coverage,
            exposure_gini={n: to_float(v, f"gini_exposure@{n}", where)
                           for n, v in js.by_n(obj, "gini_exposure").items()},
            avg_popularity=_floats_by_n(obj, overall_raw, js.POPULARITY_ALIASES),
            avg_popularity_normalized=_floats_by_n(obj, {}, ("avg_popularity_normalized",)),
            long_tail_share=_floats_by_n(obj, {}, ("long_tail_share",)),
            popularity=(PopularityProfile.from_dict(popularity, where=f"{where}.popularity")
                        if isinstance(popularity, Mapping) else None),
            popularity_bias=(None if bias is None else PopularityBias.from_dict(
                bias, level=level, missing=missing, where=f"{where}.popularity_bias")),
            popularity_bias_reason=None if reason is None else str(reason),
            n_users=(sum(g.n_users for g in groups.values()) if n_users is None
                     else to_int(n_users, "n_users", where)),
            n_users_excluded=_count(obj, "n_users_excluded", where),
            n_users_without_recs=_count(obj, "n_users_without_recs", where),
            n_items=_count(obj, "n_items", where),
            catalog_source=str(find_key(obj, "catalog_source") or "unknown"),
            per_user=None,
            protocol=str(find_key(obj, "protocol") or "full"),
            warnings=_warnings_from(obj, where),
            **settings,
        )

    def to_dataframe(self) -> pd.DataFrame:
        """A tidy table: one row per (quantity, group, metric, n).

        Columns ``quantity``, ``group``, ``metric``, ``n`` (nullable integers),
        ``value``, ``ci_low``, ``ci_high``, ``pvalue``, ``pvalue_holm``. The
        quantities:

        - ``mean`` (per group), ``overall``, ``rd``, ``nrd``, ``ib``: the top-N
          metrics, ``metric`` and ``n`` set;
        - ``item_coverage``, ``gini_exposure``, ``avg_popularity``,
          ``avg_popularity_normalized``, ``long_tail_share``: per ``n``, no metric;
        - ``popularity_bias``: ``popularity_bias.overall`` (``group`` empty) and
          ``.groups``, ``metric`` one of ARP ... novelty;
        - ``popularity_profile``: ``popularity_bias.profile_overall`` (``group``
          empty) and ``.profile_groups``, ``metric`` one of ``profile_popularity``,
          ``profile_tail_share``, ``test_tail_share``, ``n`` empty;
        - ``user_popularity_group``: ``popularity_bias.user_popularity_groups``,
          ``group`` the popularity group (``niche`` ... or ``q1`` ...), ``metric`` a
          popularity-bias metric (with ``n``) or a profile figure (``n`` empty).
        """
        rows: list[dict[str, Any]] = []
        for g in self.groups.values():
            rows += _keyed_rows("mean", g.name, g.metrics)
        rows += _keyed_rows("overall", None, self.overall)
        for ib in self.inter_bias.values():
            rows.append(_row("rd", None, ib.metric, ib.n, ib.rd,
                             pvalue=ib.pvalue, pvalue_holm=ib.pvalue_holm))
            rows.append(_row("nrd", None, ib.metric, ib.n, ib.nrd))
            rows.append(_row("ib", None, ib.metric, ib.n, ib.ib))
        for c in self.n:
            if c in self.item_coverage:
                rows.append(_row("item_coverage", None, None, c, self.item_coverage[c]))
            if c in self.exposure_gini:
                rows.append(_row("gini_exposure", None, None, c, self.exposure_gini[c]))
            for name in _POPULARITY_FIGURES:
                table = getattr(self, name)
                if table is not None and c in table:
                    rows.append(_row(name, None, None, c, table[c]))
        if self.popularity_bias is not None:
            rows += _popularity_bias_rows(self.popularity_bias)
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
        frame = pd.DataFrame(rows).reindex(columns=columns)
        frame["n"] = frame["n"].astype("Int64")
        return frame


def _warnings_from(obj: Mapping[str, Any], where: str) -> tuple[str, ...]:
    """The ``warnings`` list of the JSON (absent: none)."""
    raw = find_key(obj, "warnings")
    if raw is None:
        return ()
    if not isinstance(raw, list) or not all(isinstance(w, str) for w in raw):
        raise InputError(f"{where}: `warnings` must be a list of strings")
    return tuple(raw)


def _row(
    quantity: str, group: str | None, metric: str | None, c: int | None, est: Estimate | float,
    **extra: float,
) -> dict[str, Any]:
    """One row of :meth:`FairnessEvaluation.to_dataframe` (a bare number has no CI)."""
    if isinstance(est, Estimate):
        values = {"value": est.value, "ci_low": est.ci.low, "ci_high": est.ci.high}
    else:
        values = {"value": est, "ci_low": np.nan, "ci_high": np.nan}
    return {"quantity": quantity, "group": group, "metric": metric, "n": c} | values | extra


def _keyed_rows(
    quantity: str, group: str | None, section: Mapping[str, Estimate]
) -> list[dict[str, Any]]:
    """The rows of a section keyed ``<metric>@<N>`` (or a bare name: ``n`` empty)."""
    rows = []
    for key, est in section.items():
        metric, _, cut = key.partition("@")
        rows.append(_row(quantity, group, metric, int(cut) if cut else None, est))
    return rows


def _popularity_bias_rows(bias: PopularityBias) -> list[dict[str, Any]]:
    """The ``popularity_bias``, ``popularity_profile`` and ``user_popularity_group`` rows."""
    rows = []
    for group, section in [(None, bias.overall), *bias.groups.items()]:
        rows += _keyed_rows("popularity_bias", group, section)
    for group, section in [(None, bias.profile_overall), *bias.profile_groups.items()]:
        rows += _keyed_rows("popularity_profile", group, section)
    for name, pop_group in bias.user_popularity_groups.items():
        rows += _keyed_rows("user_popularity_group", name, pop_group.metrics)
        rows += _keyed_rows("user_popularity_group", name, pop_group.profile)
    return rows


# ------------------------------------------------------------ reading JSON back
def _metric_section(obj: Any, where: str, level: float, missing: str) -> dict[str, Estimate]:
    """The ``<metric>@<N>`` estimates of a JSON object, keys canonical (``"ndcg@10"``)."""
    items = js.metric_items(obj, where)
    if not items:
        raise InputError(js.NO_METRIC_MSG.format(where=where, command=js.FAIRNESS_CMD))
    return {
        f"{m}@{n}": js.estimate(v, f"{where}.{m}@{n}", level, missing) for (m, n), v in items
    }


def _count(obj: Mapping[str, Any], key: str, where: str) -> int:
    """A whole number the JSON may leave out (0 when absent or ``null``)."""
    value = find_key(obj, key)
    return 0 if value is None else to_int(value, key, where)


def _settings_from(obj: Mapping[str, Any], where: str) -> dict[str, Any]:
    """The evaluation settings recorded in ``settings`` (defaults when absent)."""
    raw = find_key(obj, "settings")
    settings = raw if isinstance(raw, Mapping) else {}
    where = f"{where}.settings"

    def get(key: str, default: Any) -> Any:
        value = find_key(settings, key)
        return default if value is None else value

    return {
        "n_boot": to_int(get("n_boot", 0), "n_boot", where),
        "n_resamples": to_int(get("n_resamples", 0), "n_resamples", where),
        "confidence_level": to_float(get("confidence_level", 0.95), "confidence_level", where),
        "min_group_size": to_int(get("min_group_size", 1), "min_group_size", where),
        "resample_coverage": to_bool(get("resample_coverage", False), "resample_coverage",
                                     where),
        "inter_bias_ci_rule": get("inter_bias_ci_rule", OLDER_INTER_BIAS_CI_RULE),
    }


def _groups_from(
    obj: Mapping[str, Any], where: str, protected: str | None, level: float, missing: str
) -> dict[str, GroupMetrics]:
    raw = need_key(obj, where, js.FAIRNESS_CMD, "groups")
    if not isinstance(raw, Mapping) or len(raw) < 2:
        raise InputError(GROUPS_MSG.format(where=where))
    return {
        str(name): GroupMetrics.from_dict(
            str(name), entry, protected=str(name) == protected, level=level, missing=missing,
            where=where,
        )
        for name, entry in raw.items()
    }


def _coverage_from(
    obj: Mapping[str, Any], overall: Any, where: str, level: float, missing: str
) -> dict[int, Estimate]:
    found = js.by_n(obj, *js.COVERAGE_ALIASES)
    if not found and isinstance(overall, Mapping):
        found = js.by_n(overall, *js.COVERAGE_ALIASES)
    if not found:
        raise InputError(COVERAGE_MSG.format(where=where, command=js.FAIRNESS_CMD))
    return {
        n: js.estimate(v, f"{where}.item_coverage@{n}", level, missing) for n, v in found.items()
    }


def _floats_by_n(
    obj: Mapping[str, Any], overall: Any, aliases: tuple[str, ...]
) -> dict[int, float] | None:
    """``<alias>@N`` point values at the top level, else inside ``overall``; or None."""
    found = js.by_n(obj, *aliases)
    if not found and isinstance(overall, Mapping):
        found = js.by_n(overall, *aliases)
    if not found:
        return None
    return {n: js.bounds(v, f"{aliases[0]}@{n}")[0] for n, v in found.items()}


def _inter_bias_from(
    obj: Mapping[str, Any], where: str, level: float, missing: str, method: str
) -> dict[str, InterBias]:
    sections = {
        name: dict(js.metric_items(need_key(obj, where, js.FAIRNESS_CMD, name), f"{where}.{name}"))
        for name in ("rd", "nrd", "ib")
    }
    keys = list(dict.fromkeys([*sections["rd"], *sections["nrd"], *sections["ib"]]))
    return {
        f"{m}@{n}": InterBias.from_dict(
            (m, n), *(sections[name].get((m, n)) for name in ("rd", "nrd", "ib")),
            level=level, missing=missing, where=where, method=method,
        )
        for m, n in keys
    }


def _attributes_from(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    return (str(value),) if isinstance(value, str) else tuple(str(v) for v in value)


def _cutoffs_from(
    obj: Mapping[str, Any], overall: Mapping[str, Estimate], coverage: Mapping[int, Estimate],
    where: str,
) -> tuple[int, ...]:
    """The ``n`` list of the JSON, else every N of ``overall`` and the coverage."""
    listed = find_key(obj, "n")
    if isinstance(listed, list):
        return tuple(to_int(c, "n", where) for c in listed)
    seen = {int(key.split("@")[1]) for key in overall} | set(coverage)
    return tuple(sorted(seen))
