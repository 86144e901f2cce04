"""The fairness report's comparison section: a study folder with ``compare.json``.

``recaudit fairness run`` writes ``DATASET/compare.json``
(:class:`recaudit.fairness.FairnessComparison`): every pair of models, paired by user,
the rows of each kind adjusted as one family. The page shows a forest plot of the
differences in the headline metric's group gap (RD) with their adjusted intervals, a
table of the headline rows (the metric's mean, RD, NRD), and the verdict names the
model with the smaller gap where the family's test says so
(:func:`fairness_comparison_verdict`). Every number cell points into the sidecar's
``comparison`` (``data-path``).
"""

from __future__ import annotations

import math

from ..fairness import FairnessComparison, MetricComparison
from ._page import Cell, Fig, Section, Table, finite, fmt_p, num_cell
from ._sections_compare import forest_plot

__all__ = ["fairness_comparison_section", "fairness_comparison_verdict"]

_GAPS = ("rd", "nrd", "ib")


def _headline_rows(result: FairnessComparison, key: str) -> list[tuple[int, MetricComparison]]:
    """(index in ``rows``, row) of the headline metric's mean over all users and its
    gaps, pair by pair."""
    wanted = {key, *(f"{g}_{key}" for g in _GAPS)}
    return [(i, r) for i, r in enumerate(result.rows) if r.metric in wanted and not r.group]


def _adjusted(r: MetricComparison) -> tuple[float, float, float]:
    """The adjusted interval and its level (the row's own when there is none)."""
    if math.isfinite(r.ci_low_adjusted) and math.isfinite(r.adjusted_level):
        return r.ci_low_adjusted, r.ci_high_adjusted, r.adjusted_level
    return r.ci_low, r.ci_high, r.confidence_level


def fairness_comparison_verdict(result: FairnessComparison, key: str, alpha: float) -> str:
    """Which model has the smaller group gap in ``key``, in words: each pair whose RD
    difference is significant after the family's adjustment (with its adjusted
    interval), else that no pair differs. Two RDs of opposite sign favour different
    groups: neither is called less biased."""
    found = [r for r in result.rows if r.metric == f"rd_{key}" and not r.group
             and math.isfinite(r.pvalue_adjusted) and r.pvalue_adjusted <= alpha]
    if not found:
        return (f"No pair of models differs clearly in the group gap of {key} (RD): every "
                f"adjusted p-value is above {alpha:g}.")
    parts = []
    for r in found:
        low, high, level = _adjusted(r)
        ci = (f"{level:.1%} CI of RD({r.a}) - RD({r.b}) {low:+.3f} to {high:+.3f}, "
              f"{r.adjust}-adjusted p = {r.pvalue_adjusted:.3g}")
        if r.value_a * r.value_b < 0:
            parts.append(f"{r.a} and {r.b} favour opposite groups in {key} (RD "
                         f"{r.value_a:+.3f} vs {r.value_b:+.3f}; {ci})")
            continue
        less, more = (r.a, r.b) if abs(r.value_a) < abs(r.value_b) else (r.b, r.a)
        parts.append(f"{less} has a smaller group gap than {more} in {key} (RD "
                     f"{r.value_a:+.3f} vs {r.value_b:+.3f}; {ci})")
    return "; ".join(parts) + "."


def fairness_comparison_section(result: FairnessComparison, key: str, *,
                                alpha: float) -> Section:
    """The forest plot of the headline RD differences, the table of the headline rows,
    the method."""
    shown = _headline_rows(result, key)
    table_rows = []
    for i, r in shown:
        path = f"comparison/rows/{i}"
        ci = (f"[{r.ci_low_adjusted:+.3f}, {r.ci_high_adjusted:+.3f}]"
              if finite(r.ci_low_adjusted) and finite(r.ci_high_adjusted) else "n/a")
        table_rows.append((
            Cell(r.a), Cell(r.b), Cell(r.metric),
            num_cell(f"{path}/value_a", r.value_a, f"{r.value_a:.3f}"),
            num_cell(f"{path}/value_b", r.value_b, f"{r.value_b:.3f}"),
            num_cell(f"{path}/difference", r.difference, f"{r.difference:+.3f}"),
            num_cell(f"{path}/ci_low_adjusted", r.ci_low_adjusted, ci),
            num_cell(f"{path}/pvalue_adjusted", r.pvalue_adjusted, fmt_p(r.pvalue_adjusted))
            if finite(r.pvalue_adjusted) else Cell("undefined"),
            Cell(r.test),
        ))
    rd = [r for _, r in shown if r.metric == f"rd_{key}"]
    figures = (Fig(
        "fig-fairness-compare", f"Which model has the smaller group gap in {key}",
        f"Difference in RD of {key} between two models (a - b), paired by user, with the "
        "interval adjusted for every comparison of the study (dark) and the pair's own "
        "interval (light). An interval that does not cross the dashed line: the gaps "
        "differ.", forest_plot(
            [f"{r.a} - {r.b}" for r in rd], rd, xlabel="RD(a) - RD(b)",
            own="the pair's own CI", fig_id="fig-fairness-compare")),) if rd else ()
    table = Table(
        "tab-fairness-compare",
        f"Every pair of models on {key}: its mean over all users, its group gaps (RD, "
        f"NRD) and its inter-bias (IB); each model's value, the difference a - b, its "
        f"interval at the family's level and the "
        f"{result.adjust}-adjusted p (a family: the rows of one kind -- mean, one "
        "group's mean, RD, NRD or IB -- over every pair, metric and cut-off; "
        "`compare.json` has them all).",
        ("a", "b", "figure", "a's value", "b's value", "a - b", "adjusted CI",
         "adjusted p", "test"),
        tuple(table_rows),
    )
    notes = (
        fairness_comparison_verdict(result, key, alpha),
        *(() if result.protocol == "full" else (
            f"These lists were ranked under the sampled protocol {result.protocol}.",
            *result.warnings)),
        "Paired by user: a user bootstrap stratified by group (the same users resampled "
        "for both models) for every interval but IB's; the paired permutation test for "
        "the means "
        "(or the paired t / Wilcoxon test, as chosen), RD and NRD. IB is tested by "
        "swapping each user's two whole lists (so both models' item coverage is "
        "recomputed under the null); its interval is the delete-one-user jackknife's "
        "(both models' NRD and coverage recomputed without each user), for the IB "
        "difference expected on an audit of this many users with these two trained "
        "models -- not the spread between retrainings. Method and validation: "
        "docs/fairness-metrics.md \"Comparing recommenders\", docs/validation-fairness.md.",
    )
    return Section("fairness-compare", "Comparing the models", figures=figures,
                   tables=(table,), notes=notes)
