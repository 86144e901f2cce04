"""Does the position effect depend on what stands at the position? Position lift by
item class (e.g. popular vs long-tail items) and the difference between two classes.

In a permutation audit every candidate is shown at every prompt position in random
orders, so for an item the position it is shown at is randomised. The *lift* of a class
g at prompt position p is how much more often an item of class g is chosen when it is
shown at p than when it is shown elsewhere:

    lift_g = sum_{e,j in g} s_ej [pos_ej = p] / sum_{e,j in g} [pos_ej = p]
           - sum_{e,j in g} s_ej [pos_ej != p] / sum_{e,j in g} [pos_ej != p],

over valid evaluations e and the candidates j of their query (s_ej = 1 when j was
chosen). Under the paper's mixture model (with probability p_bias the model takes
whatever stands at the favoured position, otherwise it chooses by preference, spec
section 8) and one p_bias for every item, lift_g = p_bias for every class: the lift is
the position-driven share, free of how often the class is preferred. A class whose
items are taken for their position more often has a larger lift, so
``lift_b - lift_a`` measures the interaction of position and class.

Intervals: the queries are the independent units; the four sums per (query, class)
are resampled together (a query bootstrap of a ratio of sums, Davison & Hinkley 1997,
section 3.2), percentile intervals, and the p-value of "no difference" is the one
dual to the percentile interval, ``min(1, 2 min(1 + #{D* <= 0}, 1 + #{D* >= 0}) /
(B + 1))``. Coverage and type-I error are measured in docs/joint-audit.md
("Validation of the position lift by class").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from .._records import as_mapping, integer, need, number
from .._stats import DEFAULT_N_BOOT, Estimate, as_generator, bootstrap_weights, percentile_interval
from ..exceptions import InputError
from ._evaluations import Evaluations

__all__ = ["ClassPositionLift", "position_lift_by_class"]

MSG_CLASS_SHAPE = ("`item_class` must hold one label per query and original index, "
                   "shape ({q}, {k}); got {shape}")
MSG_CONTRAST = ("`contrast` must name two different classes that occur among the candidates "
                "({found}); got {contrast!r}")
MSG_POSITION = "`position` must be a prompt position 1..{k}, got {position!r}"
MSG_N_BOOT = "`n_boot` must be an integer >= 100, got {n_boot!r}"
MSG_LEVEL = "`confidence_level` must be in (0, 1), got {level!r}"


@dataclass(frozen=True)
class ClassPositionLift:
    """Position lift per item class, and the difference between two classes.

    Attributes
    ----------
    position : int
        The prompt position (1-based) whose lift is measured.
    classes : tuple of str
        Every class label, sorted.
    lift : dict of str to Estimate
        ``lift_g`` with its query-bootstrap percentile CI, per class.
    rate_at, rate_elsewhere : dict of str to float
        The two selection rates whose difference is the lift.
    showings_at : dict of str to int
        How often an item of the class stood at ``position`` (the lift's precision).
    contrast : tuple of str
        ``(a, b)``: the difference is ``lift_b - lift_a``.
    difference : Estimate
        ``lift_b - lift_a`` with its CI.
    pvalue : float
        Two-sided bootstrap p-value of "no difference" (dual to the percentile CI).
    n_queries, n_evaluations, n_boot : int
    """

    position: int
    classes: tuple[str, ...]
    lift: dict[str, Estimate]
    rate_at: dict[str, float]
    rate_elsewhere: dict[str, float]
    showings_at: dict[str, int]
    contrast: tuple[str, str]
    difference: Estimate
    pvalue: float
    n_queries: int
    n_evaluations: int
    n_boot: int

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: every field, estimates as ``{"value", "ci_low", "ci_high"}``."""
        return {
            "position": self.position, "classes": list(self.classes),
            "lift": {g: e.to_dict() for g, e in self.lift.items()},
            "rate_at": dict(self.rate_at), "rate_elsewhere": dict(self.rate_elsewhere),
            "showings_at": dict(self.showings_at), "contrast": list(self.contrast),
            "difference": self.difference.to_dict(), "pvalue": self.pvalue,
            "n_queries": self.n_queries, "n_evaluations": self.n_evaluations,
            "n_boot": self.n_boot,
        }

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> ClassPositionLift:
        """Read :meth:`to_dict`'s JSON back (``from_dict(x.to_dict()).to_dict() ==
        x.to_dict()``); a missing key or a non-number raises ``InputError`` naming it."""
        what = "ClassPositionLift"
        obj = as_mapping(obj, what)

        def by_class(key: str) -> Mapping[str, Any]:
            return as_mapping(need(obj, key, what), f"{what}.{key}")

        contrast = tuple(str(c) for c in need(obj, "contrast", what))
        if len(contrast) != 2:
            raise InputError(f"{what}.contrast must name two classes, got {contrast!r}")
        return cls(
            position=integer(obj, "position", what),
            classes=tuple(str(c) for c in need(obj, "classes", what)),
            lift={g: Estimate.from_dict(e, method="percentile bootstrap")
                  for g, e in by_class("lift").items()},
            rate_at={g: number(by_class("rate_at"), g, f"{what}.rate_at")
                     for g in by_class("rate_at")},
            rate_elsewhere={g: number(by_class("rate_elsewhere"), g, f"{what}.rate_elsewhere")
                            for g in by_class("rate_elsewhere")},
            showings_at={g: integer(by_class("showings_at"), g, f"{what}.showings_at")
                         for g in by_class("showings_at")},
            contrast=(contrast[0], contrast[1]),
            difference=Estimate.from_dict(need(obj, "difference", what),
                                          method="percentile bootstrap"),
            pvalue=number(obj, "pvalue", what),
            n_queries=integer(obj, "n_queries", what),
            n_evaluations=integer(obj, "n_evaluations", what),
            n_boot=integer(obj, "n_boot", what),
        )


def position_lift_by_class(
    evaluations: Evaluations,
    item_class: npt.ArrayLike,
    *,
    contrast: Sequence[str],
    position: int = 1,
    n_boot: int = DEFAULT_N_BOOT,
    confidence_level: float = 0.95,
    rng: np.random.Generator | int | None = None,
) -> ClassPositionLift:
    """Position lift of each item class and the difference of two classes' lifts.

    Parameters
    ----------
    evaluations : Evaluations
        Valid evaluations (:func:`~recaudit.positional.evaluations_from_table`).
    item_class : array_like of str, shape (n_queries, k)
        ``item_class[q, j]``: the class of the candidate with original index ``j + 1``
        of query ``evaluations.query_ids[q]`` (e.g. ``"head"`` / ``"tail"``).
    contrast : (str, str)
        ``(a, b)``: the difference reported is ``lift_b - lift_a``.
    position : int
        The 1-based prompt position (1: primacy).
    n_boot : int
        Bootstrap resamples of the queries.
    confidence_level : float
    rng : numpy.random.Generator or int, optional

    Returns
    -------
    ClassPositionLift

    Notes
    -----
    ``lift_g = A_g / B_g - C_g / D_g`` with ``A_g`` the choices of class-g items shown
    at ``position``, ``B_g`` their showings there, ``C_g`` / ``D_g`` the same elsewhere
    (module docstring). Under the mixture model of the spec (section 8) with a
    class-specific ``p_g`` this is ``p_g`` when every query's candidates share one
    class, and a showings-weighted blend otherwise.

    References
    ----------
    Davison, A. C. & Hinkley, D. V. (1997). Bootstrap Methods and their Application,
    sections 2.4 and 3.2. Cambridge University Press.
    """
    labels, codes, (a, b), pos = _iv(evaluations, item_class, contrast, position, n_boot,
                                     confidence_level)
    sums = _per_query_sums(evaluations, codes, len(labels), pos)  # (Q, G, 4)
    gen = as_generator(rng)
    point = _lifts(sums.sum(axis=0))
    reps = np.concatenate([_lifts(np.einsum("bq,qgf->bgf", w, sums))
                           for w in bootstrap_weights(sums.shape[0], n_boot, gen)])
    ia, ib = labels.index(a), labels.index(b)
    diff_reps = reps[:, ib] - reps[:, ia]
    finite = diff_reps[np.isfinite(diff_reps)]
    pvalue = float(min(1.0, 2 * min(1 + np.count_nonzero(finite <= 0),
                                    1 + np.count_nonzero(finite >= 0)) / (finite.size + 1)))
    total = sums.sum(axis=0)

    def est(value: float, r: npt.NDArray[np.float64]) -> Estimate:
        return Estimate(float(value), percentile_interval(r, confidence_level=confidence_level))

    return ClassPositionLift(
        position=pos, classes=tuple(labels),
        lift={g: est(point[i], reps[:, i]) for i, g in enumerate(labels)},
        rate_at={g: _ratio(total[i, 0], total[i, 1]) for i, g in enumerate(labels)},
        rate_elsewhere={g: _ratio(total[i, 2], total[i, 3]) for i, g in enumerate(labels)},
        showings_at={g: int(total[i, 1]) for i, g in enumerate(labels)},
        contrast=(a, b), difference=est(point[ib] - point[ia], diff_reps), pvalue=pvalue,
        n_queries=evaluations.n_queries, n_evaluations=evaluations.n_evaluations,
        n_boot=n_boot,
    )


def _iv(evaluations: Evaluations, item_class: npt.ArrayLike, contrast: Sequence[str],
        position: int, n_boot: int, level: float
        ) -> tuple[list[str], npt.NDArray[np.intp], tuple[str, str], int]:
    if not isinstance(evaluations, Evaluations):
        raise InputError("`evaluations` must be an Evaluations (evaluations_from_table)")
    k, q = evaluations.k, evaluations.n_queries
    cls = np.asarray(item_class, dtype=object)
    if cls.shape != (q, k):
        raise InputError(MSG_CLASS_SHAPE.format(q=q, k=k, shape=cls.shape))
    labels = sorted({str(x) for x in cls.ravel()})
    pair = tuple(str(c) for c in contrast) if not isinstance(contrast, str) else ()
    if len(pair) != 2 or pair[0] == pair[1] or not set(pair) <= set(labels):
        raise InputError(MSG_CONTRAST.format(found=", ".join(labels), contrast=contrast))
    if isinstance(position, bool) or not isinstance(position, (int, np.integer)) \
            or not 1 <= position <= k:
        raise InputError(MSG_POSITION.format(k=k, position=position))
    if isinstance(n_boot, bool) or not isinstance(n_boot, (int, np.integer)) or n_boot < 100:
        raise InputError(MSG_N_BOOT.format(n_boot=n_boot))
    if not 0 < level < 1:
        raise InputError(MSG_LEVEL.format(level=level))
    codes = np.searchsorted(labels, cls.astype(str)).astype(np.intp)
    return labels, codes, (pair[0], pair[1]), int(position)


def _per_query_sums(ev: Evaluations, codes: npt.NDArray[np.intp], n_classes: int,
                    position: int) -> npt.NDArray[np.float64]:
    """``S[q, g] = (A, B, C, D)``: choices and showings of class g at / away from
    ``position`` in query q's valid evaluations."""
    n, k = ev.orders.shape
    shown_class = codes[ev.query[:, None], ev.orders]  # (n, k): class at each position
    chosen = ev.orders == ev.item[:, None]  # (n, k): the chosen candidate's position
    at = np.zeros((n, k), dtype=bool)
    at[:, position - 1] = True
    out = np.zeros((ev.n_queries, n_classes, 4))
    q = np.broadcast_to(ev.query[:, None], (n, k))
    for f, (mask, weight) in enumerate(((at, chosen), (at, None), (~at, chosen), (~at, None))):
        w = np.ones((n, k)) if weight is None else weight.astype(float)
        np.add.at(out[:, :, f], (q[mask], shown_class[mask]), w[mask])
    return out


def _ratio(num: float, den: float) -> float:
    return float(num / den) if den > 0 else float("nan")


def _lifts(sums: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """``A/B - C/D`` over the last axis (nan where a class was never shown there)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return sums[..., 0] / sums[..., 1] - sums[..., 2] / sums[..., 3]

