"""The tables ``recaudit fairness evaluate`` prints (without ``--json``)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table

if TYPE_CHECKING:  # the library is imported by the command: `recaudit --help` stays fast
    from .._stats import Estimate
    from ..fairness import FairnessComparison, FairnessEvaluation, MetricComparison

__all__ = ["comparison_sentence", "print_comparison", "print_evaluation",
           "protocol_shift_table"]

#: Exposure columns, each shown when the evaluation has it (popularity needs --train).
EXPOSURE_COLUMNS = ("item_coverage", "gini_exposure", "avg_popularity", "long_tail_share")
#: Popularity-bias columns (shown with --train).
POPULARITY_COLUMNS = ("arp", "aplt", "aclt", "poprsp", "popreo", "novelty")


def fmt(value: float | None, ci_low: float = math.nan, ci_high: float = math.nan) -> str:
    """``value [low, high]``; the bounds are left out when not computed."""
    if value is None or math.isnan(value):
        return "undefined"
    if ci_low is None or math.isnan(ci_low):
        return f"{value:.4f}"
    return f"{value:.4f} [{ci_low:.4f}, {ci_high:.4f}]"


def _fmt_p(p: float) -> str:
    """A p-value; ``n/a`` when not computed (``--n-resamples 0``)."""
    return "n/a" if p is None or math.isnan(p) else f"{p:.4g}"


def fmt_estimate(est: Estimate) -> str:
    """:func:`fmt` of an estimate with its CI."""
    return fmt(est.value, est.ci.low, est.ci.high)


def group_means_table(result: FairnessEvaluation) -> Table:
    """Every metric's mean per group and overall, with CIs."""
    table = Table(title=f"Group means ({result.n_users} users)")
    table.add_column("metric")
    for name, g in result.groups.items():
        tag = " (protected)" if g.protected else ""
        table.add_column(f"{name}{tag}, n={g.n_users}")
    table.add_column("overall")
    for key, est in result.overall.items():
        cells = [fmt_estimate(g.metrics[key]) for g in result.groups.values()]
        table.add_row(key, *cells, fmt_estimate(est))
    return table


def inter_bias_table(result: FairnessEvaluation) -> Table:
    """RD with its p-values, NRD and IB of every metric and cut-off."""
    table = Table(title=f"Inter-bias: protected {result.protected!r} vs all others")
    for column in ("metric", "RD", "p", "p (Holm)", "NRD", "IB"):
        table.add_column(column)
    for key, ib in result.inter_bias.items():
        table.add_row(
            key,
            fmt_estimate(ib.rd),
            _fmt_p(ib.pvalue),
            _fmt_p(ib.pvalue_holm),
            fmt_estimate(ib.nrd),
            fmt_estimate(ib.ib),
        )
    return table


def exposure_table(result: FairnessEvaluation) -> Table:
    """Item coverage, exposure Gini and the popularity figures at every cut-off."""
    table = Table(title=f"Exposure ({result.n_items} items, {result.catalog_source})")
    table.add_column("N")
    columns = {
        "item_coverage": {c: fmt_estimate(e) for c, e in result.item_coverage.items()},
        "gini_exposure": {c: fmt(v) for c, v in result.exposure_gini.items()},
        "avg_popularity": {c: fmt(v) for c, v in (result.avg_popularity or {}).items()},
        "long_tail_share": {c: fmt(v) for c, v in (result.long_tail_share or {}).items()},
    }
    present = [k for k in EXPOSURE_COLUMNS if result.n[0] in columns[k]]
    for k in present:
        table.add_column(k)
    for c in result.n:
        table.add_row(str(c), *(columns[k][c] for k in present))
    return table


def popularity_bias_table(result: FairnessEvaluation) -> Table | None:
    """ARP, APLT, ACLT, PopRSP, PopREO and novelty over all users at every cut-off.

    Point values only, to fit 80 columns; the CIs and the per-group values are in
    ``--json``. ``None`` when they were not computed (no ``--train``).
    """
    bias = result.popularity_bias
    if bias is None:
        return None
    table = Table(
        title=f"Popularity bias, all users (head {bias.n_head_items} items; "
        "CIs, groups: --json)"
    )
    table.add_column("N")
    for name in POPULARITY_COLUMNS:
        table.add_column(name)
    for c in result.n:
        cells = [fmt(bias.overall[f"{name}@{c}"].value) for name in POPULARITY_COLUMNS]
        table.add_row(str(c), *cells)
    return table


def protocol_shift_table(rows: Sequence[Mapping[str, Any]]) -> Table:
    """How each model's NDCG, RD-NDCG and IB-NDCG move between protocols.

    ``rows`` from :meth:`~recaudit.fairness.study.FairnessStudyResult.protocol_shifts`; the change
    is from the config's first protocol, the rank is by NDCG among the models.
    """
    c = rows[0]["n"] if rows else 10
    table = Table(title=f"Protocols: NDCG@{c}, RD-NDCG@{c}, IB-NDCG@{c} (change from the "
                  "first protocol; rank by NDCG)")
    for column in ("dataset", "model", "protocol", "NDCG", "rank", "RD", "IB"):
        table.add_column(column)

    def cell(row: Mapping[str, Any], key: str) -> str:
        if row["delta_" + key] == 0 or math.isnan(row["delta_" + key]):
            return fmt(row[key])
        return f"{fmt(row[key])} ({row['delta_' + key]:+.4f})"

    for row in rows:
        table.add_row(str(row["dataset"]), str(row["model"]), str(row["protocol"]),
                      cell(row, "ndcg"), str(row["ndcg_rank"]), cell(row, "rd_ndcg"),
                      cell(row, "ib_ndcg"))
    return table


def print_evaluation(result: FairnessEvaluation, console: Console) -> None:
    """The tables and the exclusion counts."""
    if result.protocol != "full":
        console.print(f"protocol: {result.protocol} (ranked within sampled candidates)")
    console.print(group_means_table(result))
    console.print(inter_bias_table(result))
    console.print(exposure_table(result))
    popularity = popularity_bias_table(result)
    if popularity is not None:
        console.print(popularity)
    console.print(
        f"excluded users without test items: {result.n_users_excluded}; "
        f"evaluated users without a list (scored 0): {result.n_users_without_recs}"
    )


def _diff(r: MetricComparison) -> str:
    """``a - b [low, high]`` at the family's level, signed."""
    if not math.isfinite(r.difference):
        return "undefined"
    if not math.isfinite(r.ci_low_adjusted):  # an IB row whose jackknife is undefined
        return f"{r.difference:+.4f} (test only)"
    return f"{r.difference:+.4f} [{r.ci_low_adjusted:+.4f}, {r.ci_high_adjusted:+.4f}]"


def comparison_sentence(r: MetricComparison, alpha: float) -> str:
    """One row in plain words: which model is higher (or that no difference is shown)."""
    kind, _, key = r.metric.partition("_")
    what = (f"the gap {kind.upper()} of {key}" if kind in ("rd", "nrd") else
            f"the inter-bias IB of {key}" if kind == "ib" else
            f"{r.metric}" + (f" for group {r.group}" if r.group else ""))
    if not math.isfinite(r.pvalue_adjusted):
        return f"{r.a} vs {r.b}: {what} is undefined for one of them."
    if r.pvalue_adjusted > alpha:
        return (f"{r.a} vs {r.b}: no difference shown in {what} ({r.adjust} p = "
                f"{r.pvalue_adjusted:.3g}).")
    higher, lower = (r.a, r.b) if r.difference > 0 else (r.b, r.a)
    return (f"{r.a} vs {r.b}: {higher} is higher than {lower} in {what} by "
            f"{abs(r.difference):.4f} ({r.adjust} p = {r.pvalue_adjusted:.3g}).")


def print_comparison(result: FairnessComparison, *, keys: Sequence[str]) -> None:
    """Per pair, the headline metrics' rows (difference a - b with the family-adjusted
    CI, adjusted p), then one sentence per row."""
    alpha = 1.0 - result.confidence_level
    shown = [r for r in result.rows if r.metric.split("_", 1)[-1] in keys]
    ranking = "" if result.protocol == "full" else f"sampled ranking {result.protocol}; "
    table = Table(title=f"Paired comparisons ({ranking}{result.test}; {result.adjust} within "
                        f"each family of rows, {result.n_resamples} permutations; CIs at "
                        "the family's level)")
    for col in ("a", "b", "figure", "group", "value a", "value b", "a - b [CI]", "p adj."):
        table.add_column(col, justify="right" if col in ("a - b [CI]", "p adj.") else "left")
    for r in shown:
        table.add_row(r.a, r.b, r.metric, r.group or "all", fmt(r.value_a), fmt(r.value_b),
                      _diff(r), _fmt_p(r.pvalue_adjusted))
    console = Console()
    console.print(table)
    for r in shown:
        if not r.group:
            console.print(comparison_sentence(r, alpha))
