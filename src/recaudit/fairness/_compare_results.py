"""The result of comparing recommenders on the inter-bias metrics: one row per pair of
models, metric and group, and the family they were adjusted in.

Read back strictly (:mod:`recaudit._records`): ``to_dict`` / ``from_dict`` round-trip.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

import pandas as pd

from .._records import as_mapping, integer, need, number, text, to_int
from ..exceptions import InputError

__all__ = ["FairnessComparison", "MetricComparison"]

_TEXT = ("a", "b", "metric", "group", "test", "adjust")
_WHOLE = ("n_users",)


@dataclass(frozen=True)
class MetricComparison:
    r"""One pair of models on one figure: ``difference = value_a - value_b``.

    Attributes
    ----------
    a, b : str
        The two models.
    metric : str
        ``<metric>@<N>`` (a mean of the per-user metric), ``rd_<metric>@<N>``,
        ``nrd_<metric>@<N>`` (the group gap of each model) or ``ib_<metric>@<N>`` (the
        inter-bias; see :func:`~recaudit.fairness.compare_models`).
    group : str
        The group whose users the mean is over; ``""`` for all evaluated users and for
        the gap rows.
    value_a, value_b, difference : float
        The figure of each model and their difference (``nan`` when undefined).
    ci_low, ci_high : float
        The difference's interval at ``confidence_level``: user-level bootstrap,
        stratified by group, the same users resampled for both models; for IB rows
        :math:`D \pm t_{n-1}\, \widehat{se}_J` with the delete-one-user jackknife
        (both models' NRD and item coverage recomputed without each user; ``nan`` where
        a leave-one-out IB is undefined), an interval for the IB difference expected
        on an audit of ``n_users`` users like these, the two models fixed.
    confidence_level : float
    pvalue : float
        Two-sided test of "no difference" (``test``).
    test : str
        ``"permutation"`` (paired: each user's two values swapped at random, +1
        corrected), ``"t"`` (paired t) or ``"wilcoxon"`` (signed-rank) for the means;
        ``"permutation"`` for the RD and NRD rows, and for the IB rows (each user's
        two whole lists swapped).
    pvalue_adjusted : float
        ``pvalue`` adjusted (``adjust``) within the row's family: the rows of its kind
        (the mean over all users, one group's mean, RD, NRD or IB) over every pair,
        metric and cut-off.
    adjust : str
        ``"holm"``, ``"bh"`` or ``"none"``.
    n_users : int
        Users the row is computed over.
    ci_low_adjusted, ci_high_adjusted, adjusted_level : float
        The interval at the family's level (Bonferroni under Holm, Benjamini-Yekutieli
        under BH; :func:`recaudit._multiplicity.adjusted_level`): ``d +- t se`` with
        the bootstrap standard error, the jackknife's for IB rows.
    """

    a: str
    b: str
    metric: str
    group: str
    value_a: float
    value_b: float
    difference: float
    ci_low: float
    ci_high: float
    confidence_level: float
    pvalue: float
    test: str
    pvalue_adjusted: float
    adjust: str
    n_users: int
    ci_low_adjusted: float
    ci_high_adjusted: float
    adjusted_level: float

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready row."""
        return asdict(self)

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any], *, where: str = "MetricComparison"
                  ) -> MetricComparison:
        """Inverse of :meth:`to_dict`: text, whole numbers and numbers strict (``null``
        as ``nan``), a missing or wrong key named."""
        obj = as_mapping(obj, where)
        values: dict[str, Any] = {}
        for f in fields(cls):
            if f.name in _TEXT:
                values[f.name] = text(obj, f.name, where)
            elif f.name in _WHOLE:
                values[f.name] = integer(obj, f.name, where)
            else:
                values[f.name] = number(obj, f.name, where)
        return cls(**values)


@dataclass(frozen=True)
class FairnessComparison:
    """Every pair of a set of models compared on the inter-bias figures.

    Attributes
    ----------
    models : tuple of str
        The models, in the order given; every pair ``(a, b)`` with ``a`` before ``b``.
    rows : tuple of MetricComparison
        Per pair: for every metric and cut-off the overall row, one row per group and
        the ``rd_`` / ``nrd_`` gap rows and the ``ib_`` row.
    protected : str
        The protected group.
    n : tuple of int
        The cut-offs.
    test : str
        The test of the per-user rows.
    adjust : str
        The adjustment within each family (the rows of one kind).
    n_boot, n_resamples : int
        Bootstrap resamples of each interval; paired permutations of each test (as
        used: raised to what the families need, see
        :func:`~recaudit.fairness.compare_models`).
    confidence_level : float
    n_users : int
        Evaluated users (those with a test item), the same for every model.
    protocol : str
        How the lists were ranked: ``"full"`` or a sampled protocol (``uni100``, ...;
        ``"full"`` when read from a JSON without the key).
    warnings : tuple of str
        A sampled protocol's warnings (none for full ranking).
    """

    models: tuple[str, ...]
    rows: tuple[MetricComparison, ...]
    protected: str
    n: tuple[int, ...]
    test: str
    adjust: str
    n_boot: int
    n_resamples: int
    confidence_level: float
    n_users: int
    protocol: str = "full"
    warnings: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON form: the settings and ``rows``."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "rows"}
        out["models"], out["n"] = list(self.models), list(self.n)
        out["warnings"] = list(self.warnings)
        out["rows"] = [r.to_dict() for r in self.rows]
        return out

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any], *, where: str = "fairness comparison"
                  ) -> FairnessComparison:
        """Inverse of :meth:`to_dict` (strict; a wrong key named)."""
        obj = as_mapping(obj, where)
        rows = need(obj, "rows", where)
        models, cuts = need(obj, "models", where), need(obj, "n", where)
        notes = obj.get("warnings", [])
        if not all(isinstance(x, list) for x in (rows, models, cuts, notes)):
            raise InputError(f"{where}: `rows`, `models`, `n` and `warnings` must be JSON "
                             "lists")
        return cls(
            models=tuple(str(m) for m in models),
            rows=tuple(MetricComparison.from_dict(r, where=f"{where}, row {i}")
                       for i, r in enumerate(rows)),
            protected=text(obj, "protected", where),
            n=tuple(to_int(c, "n", where) for c in cuts),
            test=text(obj, "test", where),
            adjust=text(obj, "adjust", where),
            n_boot=integer(obj, "n_boot", where),
            n_resamples=integer(obj, "n_resamples", where),
            confidence_level=number(obj, "confidence_level", where),
            n_users=integer(obj, "n_users", where),
            protocol=text(obj, "protocol", where) if "protocol" in obj else "full",
            warnings=tuple(str(w) for w in notes),
        )

    def to_dataframe(self) -> pd.DataFrame:
        """One row per :class:`MetricComparison`, its fields as columns."""
        return pd.DataFrame([r.to_dict() for r in self.rows],
                            columns=[f.name for f in fields(MetricComparison)])

    def significant(self, alpha: float | None = None) -> tuple[MetricComparison, ...]:
        """The rows whose adjusted p-value is at most ``alpha`` (default: 1 - the
        confidence level)."""
        level = 1.0 - self.confidence_level if alpha is None else alpha
        return tuple(r for r in self.rows
                     if math.isfinite(r.pvalue_adjusted) and r.pvalue_adjusted <= level)
