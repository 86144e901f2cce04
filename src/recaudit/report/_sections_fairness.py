"""The fairness report's sections, one builder per section, and its verdict.

Each builder takes the loaded :class:`FairnessRun` -- the library's
:class:`~recaudit.fairness.FairnessEvaluation` of each model -- and returns one
:class:`Section`; numbers point into the sidecar that :func:`fairness_data` builds
(``models/<i>/...``).
The headline metric is the first of :data:`METRIC_ORDER` the results have, at N = 10
(else the middle N).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from markupsafe import Markup

from .._stats import Estimate
from ..fairness import FairnessEvaluation
from . import _plots
from ._load_fairness import METRIC_ORDER, UNNAMED, FairnessRun
from ._page import NAN_ESTIMATE, Cell, Fig, Section, Table, ci_cell, ci_num, fmt, num, p_cell
from ._sections_fairness_compare import fairness_comparison_verdict
from ._sections_popularity import popularity_data
from ._sections_protocol import protocol_clause, protocol_data, protocol_warnings

__all__ = [
    "fairness_data",
    "fairness_verdict",
    "groups_section",
    "headline",
    "inter_bias_section",
    "long_tail_section",
    "tradeoff_section",
]


def _ns(models: Mapping[str, FairnessEvaluation]) -> list[int]:
    return sorted({ib.n for ev in models.values() for ib in ev.inter_bias.values()})


def _metrics(models: Mapping[str, FairnessEvaluation]) -> list[str]:
    ns = _ns(models)
    first = next(iter(models.values())).inter_bias
    return [m for m in METRIC_ORDER if any(f"{m}@{n}" in first for n in ns)] or list(
        dict.fromkeys(ib.metric for ib in first.values())
    )


def headline(run: FairnessRun) -> tuple[str, int]:
    """The headline metric and N."""
    ns = _ns(run.evaluations)
    return _metrics(run.evaluations)[0], 10 if 10 in ns else ns[len(ns) // 2]


def _fronts(run: FairnessRun) -> dict[int, list[int]]:
    """The accuracy-bias Pareto front at each N (indices of models)."""
    metric, _ = headline(run)
    return {
        n: _plots.pareto_front([
            (ev.inter_bias[f"{metric}@{n}"].ib.value, ev.overall[f"{metric}@{n}"].value)
            for ev in run.evaluations.values()
        ])
        for n in _ns(run.evaluations)
    }


# ------------------------------------------------------------------------ verdict
def _gap_sentence(run: FairnessRun, metric: str, n: int) -> Markup:
    key = f"{metric}@{n}"
    sig = [
        (i, name, ev.inter_bias[key])
        for i, (name, ev) in enumerate(run.evaluations.items())
        if key in ev.inter_bias
        and (ev.inter_bias[key].pvalue_holm if math.isfinite(ev.inter_bias[key].pvalue_holm)
             else ev.inter_bias[key].pvalue)
        <= run.alpha
    ]
    alpha = num("alpha", run.alpha, f"{run.alpha:g}")
    if not sig:
        return Markup(
            "At alpha = {}, no model shows a significant {}@{} gap between groups "
            "(permutation test of RD). "
        ).format(alpha, metric, n)
    return Markup(
        "At alpha = {}, the {}@{} gap between groups is significant for {} "
        "(permutation test of RD). "
    ).format(
        alpha, metric, n,
        Markup(", ").join(
            Markup("{} (RD = {})").format(name, ci_num(f"models/{i}/rd/{key}", ib.rd))
            for i, name, ib in sig
        ),
    )


def _ib_sentence(run: FairnessRun, metric: str, n: int) -> Markup:
    """IB of the one model, or its range over the models (best and worst named)."""
    names = list(run.evaluations)
    ib = [ev.inter_bias[f"{metric}@{n}"].ib for ev in run.evaluations.values()]
    if len(names) == 1:
        return Markup("Its IB-{}@{} (0 = no combined bias, higher = more) is {}. ").format(
            metric, n, ci_num(f"models/0/ib/{metric}@{n}", ib[0]))
    ranked = sorted(range(len(ib)), key=lambda i: ib[i].value)
    best, worst = ranked[0], ranked[-1]
    return Markup(
        "IB-{}@{} (higher = more combined bias) ranges from {} for {} to {} for {}. "
    ).format(
        metric, n,
        ci_num(f"models/{best}/ib/{metric}@{n}", ib[best]), names[best],
        ci_num(f"models/{worst}/ib/{metric}@{n}", ib[worst]), names[worst],
    )


def fairness_verdict(run: FairnessRun) -> Markup:
    """One paragraph in plain words (group sizes are quoted from the sidecar's summary).

    With one model: its name and its IB (no range, no Pareto front); with several:
    the range of IB over the models and the accuracy-bias Pareto front.
    """
    names = list(run.evaluations)
    evaluations = list(run.evaluations.values())
    metric, n = headline(run)
    groups = Markup(", ").join(
        Markup("{} ({} users)").format(g, num(f"summary/groups/{j}/n_users", c, str(c)))
        for j, (g, c) in enumerate(_n_users(evaluations[0]).items())
    )
    if len(names) > 1:
        compared = Markup("We compared {} models").format(len(names))
    elif names[0] == UNNAMED:  # `fairness evaluate` output without --model
        compared = Markup("We evaluated one model (its JSON names none)")
    else:
        compared = Markup("We evaluated one model, {},").format(names[0])
    parts = [
        Markup("{} on the user groups {}{}, {}. ").format(
            compared, groups,
            Markup(" (protected group: {})").format(run.protected) if run.protected else "",
            protocol_clause(run),
        ),
        _gap_sentence(run, metric, n),
        _ib_sentence(run, metric, n),
    ]
    if len(names) > 1:
        front = _fronts(run)[n]
        parts.append(Markup("On the accuracy-bias Pareto front: {}; {}.").format(
            ", ".join(names[i] for i in front),
            "no single model is best on both"
            if len(front) > 1
            else "one model is both the most accurate and the least biased",
        ))
    if run.comparison is not None:  # a study folder: which model's gap is smaller
        parts.append(Markup(" <strong>Models compared:</strong> {}").format(
            fairness_comparison_verdict(run.comparison, f"{metric}@{n}", run.alpha)))
    return Markup("<p>{}</p>").format(Markup("").join(parts).strip())


# ----------------------------------------------------------------------- sections
def groups_section(run: FairnessRun) -> Section:
    """Quality per user group at the headline N."""
    models = run.evaluations
    _, main_n = headline(run)
    first = next(iter(models.values()))
    group_names = list(first.groups)
    bar_metrics = [
        m for m in METRIC_ORDER if any(f"{m}@{main_n}" in g.metrics for g in first.groups.values())
    ]
    return Section("groups", "Quality per user group", figures=(Fig(
        "fig-groups",
        f"Per-group metrics @ {main_n}",
        f"Mean metric@{main_n} per user group ({', '.join(group_names)}) with user-level "
        "bootstrap 95% CIs (other N: the sidecar). Look for pairs of bars whose "
        "intervals do not overlap: the recommender serves one group worse. Small gaps "
        "can hide behind popularity bias (see the long tail below).",
        _plots.group_bars(
            models, n=main_n, metrics=bar_metrics or _metrics(models), fig_id="fig-groups"
        ),
    ),))


def _inter_bias_rows(run: FairnessRun) -> tuple[list[tuple[Cell, ...]], list[tuple[Cell, ...]]]:
    ns = _ns(run.evaluations)
    nrd_rows, ib_rows = [], []
    for i, (model, ev) in enumerate(run.evaluations.items()):
        for name in _metrics(run.evaluations):
            nrd_row, ib_row = [Cell(model), Cell(name)], [Cell(model), Cell(name)]
            for n in ns:
                key = f"{name}@{n}"
                ib = ev.inter_bias.get(key)
                nrd_row.append(ci_cell(f"models/{i}/nrd/{key}", ib.nrd if ib else NAN_ESTIMATE))
                nrd_row.append(
                    p_cell(f"models/{i}/rd/{key}", ib.pvalue, ib.pvalue_holm) if ib
                    else Cell("n/a")
                )
                ib_row.append(ci_cell(f"models/{i}/ib/{key}", ib.ib if ib else NAN_ESTIMATE))
            nrd_rows.append(tuple(nrd_row))
            ib_rows.append(tuple(ib_row))
    return nrd_rows, ib_rows


def inter_bias_section(run: FairnessRun) -> Section:
    """NRD (with the permutation test of the group gap) and IB, every metric and N."""
    ns = _ns(run.evaluations)
    nrd_rows, ib_rows = _inter_bias_rows(run)
    return Section("inter-bias", "Inter-bias: NRD and IB", tables=(
        Table(
            "tab-nrd",
            "NRD = (RD + 1) / 2 in [0, 1]: 0.5 means equal quality for both groups, "
            "above 0.5 favours the unprotected group. p: permutation test of the group "
            "gap (Holm-adjusted when available).",
            ("model", "metric", *[c for n in ns for c in (f"NRD@{n} [95% CI]", f"p@{n}")]),
            tuple(nrd_rows),
        ),
        Table(
            "tab-ib",
            "IB = sqrt(NRD x (1 - item coverage)) in [0, 1]: higher means more overall "
            "bias (a quality gap against the protected group and/or low coverage).",
            ("model", "metric", *[f"IB@{n} [95% CI]" for n in ns]),
            tuple(ib_rows),
        ),
    ))


def _accuracy_table(run: FairnessRun, metric: str, main_n: int) -> Table:
    def row(i: int, name: str, ev: FairnessEvaluation) -> tuple[Cell, ...]:
        coverage = ev.item_coverage[main_n].value
        popularity = run.popularity.get(name, {})
        return (
            Cell(name),
            ci_cell(f"models/{i}/overall/{metric}@{main_n}", ev.overall[f"{metric}@{main_n}"]),
            Cell(fmt(coverage), f"models/{i}/item_coverage/{main_n}", coverage),
            ci_cell(f"models/{i}/avg_popularity/{main_n}", popularity[main_n])
            if main_n in popularity
            else Cell("n/a"),
        )

    rows = tuple(row(i, name, ev) for i, (name, ev) in enumerate(run.evaluations.items()))
    return Table(
        "tab-accuracy",
        f"Accuracy, coverage and popularity at N = {main_n}.",
        ("model", f"{metric}@{main_n} [95% CI]", f"item coverage@{main_n}",
         f"avg popularity@{main_n} [95% CI]"),
        rows,
    )


def tradeoff_section(run: FairnessRun) -> Section:
    """Coverage against popularity, and accuracy against inter-bias (Pareto front)."""
    models, ns = run.evaluations, _ns(run.evaluations)
    metric, main_n = headline(run)
    colors = {name: i for i, name in enumerate(models)}
    pop_ns = [
        n for n in ns
        if all(n in run.popularity.get(name, {}) and n in ev.item_coverage
               for name, ev in models.items())
    ]
    figs = []
    if pop_ns:
        figs.append(Fig(
            "fig-coverage",
            "Item coverage against average popularity",
            "One point per model (x whiskers: 95% CI of the average popularity). Popularity "
            "bias shows as points in the lower right: the model recommends the same popular "
            "items to everyone, so coverage is low.",
            _plots.coverage_popularity(
                models, run.popularity, ns=pop_ns, colors=colors, fig_id="fig-coverage"
            ),
        ))
    figs.append(Fig(
        "fig-tradeoff",
        f"Accuracy against inter-bias ({metric})",
        f"Overall {metric}@N against IB-{metric}@N, with 95% CIs. Up and to the left is "
        "better on both. Models with a black outline are on the Pareto front (dashed): no "
        "other model is both more accurate and less biased.",
        _plots.tradeoff(models, ns=ns, metric=metric, colors=colors, fig_id="fig-tradeoff"),
    ))
    return Section(
        "tradeoff",
        "Popularity, coverage and the accuracy-bias trade-off",
        notes=() if pop_ns else (
            "Average popularity is absent from the results: the coverage-popularity plot is "
            "not drawn.",
        ),
        figures=tuple(figs),
        tables=(_accuracy_table(run, metric, main_n),),
    )


def _long_tail_dict(run: FairnessRun) -> dict[str, Any]:
    if run.long_tail is None:
        return {}
    counts = run.long_tail.counts
    head = max(1, math.ceil(0.2 * len(counts)))
    return {
        "n_items": len(counts),
        "n_interactions": sum(counts),
        "head_items": head,
        "head_share": sum(counts[:head]) / max(sum(counts), 1),
        "counts": list(counts),
        "head": [
            {"item": h.item, "title": h.title, "interactions": h.interactions}
            for h in run.long_tail.head
        ],
    }


def long_tail_section(run: FairnessRun) -> Section | None:
    """The dataset's long tail (only with the run folder's ``long_tail.parquet``)."""
    if run.long_tail is None:
        return None
    share = _long_tail_dict(run)["head_share"]
    return Section(
        "long-tail",
        "The dataset's long tail",
        figures=(Fig(
            "fig-long-tail",
            "Interactions per item",
            "Items sorted by number of interactions, log scale. The steeper the drop "
            "after the shaded head, the more a recommender can score by recommending "
            "popular items, and the more popularity bias can mask group unfairness.",
            _plots.long_tail(run.long_tail.counts, head_share=share, fig_id="fig-long-tail"),
        ),),
        tables=(Table(
            "tab-head",
            "The most interacted-with items.",
            ("item", "title", "interactions"),
            tuple(
                (Cell(h.item), Cell(h.title),
                 Cell(str(h.interactions), f"long_tail/head/{j}/interactions", h.interactions))
                for j, h in enumerate(run.long_tail.head)
            ),
        ),),
    )


# ------------------------------------------------------------------------ sidecar
def _n_users(evaluation: FairnessEvaluation) -> dict[str, int]:
    return {name: g.n_users for name, g in evaluation.groups.items()}


def _model_dict(
    name: str, ev: FairnessEvaluation, popularity: Mapping[int, Estimate], extra: dict[str, Any]
) -> dict[str, Any]:
    """One model in the sidecar (``models`` items): metric keys ``"ndcg@10"``."""
    def keyed(d: Mapping[str, Estimate]) -> dict[str, Any]:
        return {key: est.to_dict() for key, est in d.items()}

    inter_bias = ev.inter_bias.items()
    return {
        "name": name,
        "n_users": _n_users(ev),
        "groups": {g: keyed(group.metrics) for g, group in ev.groups.items()},
        "overall": keyed(ev.overall),
        "item_coverage": {str(n): est.value for n, est in ev.item_coverage.items()},
        "avg_popularity": {str(n): est.to_dict() for n, est in popularity.items()},
        "rd": {
            key: {**ib.rd.to_dict(), "pvalue": ib.pvalue, "pvalue_holm": ib.pvalue_holm}
            for key, ib in inter_bias
        },
        "nrd": {key: ib.nrd.to_dict() for key, ib in inter_bias},
        "ib": {key: ib.ib.to_dict() for key, ib in inter_bias},
        "n_items": ev.n_items,
        **popularity_data(ev),
        **extra,
    }


def fairness_data(run: FairnessRun) -> dict[str, Any]:
    """The sidecar's fairness part: every number the sections show, by path."""
    models = run.evaluations
    names = list(models)
    metric, main_n = headline(run)
    first = next(iter(models.values()))
    return {
        "alpha": run.alpha,
        "summary": {
            "groups": [{"name": g, "n_users": c} for g, c in _n_users(first).items()],
        },
        "protected_group": run.protected,
        "headline": {"metric": metric, "n": main_n},
        "models": [
            _model_dict(name, ev, run.popularity.get(name, {}),
                        protocol_data(run, name, f"{metric}@{main_n}"))
            for name, ev in models.items()
        ],
        "warnings": list(protocol_warnings(run)),
        "pareto_front": {
            f"{metric}@{n}": [names[i] for i in f] for n, f in _fronts(run).items()
        },
        "long_tail": _long_tail_dict(run),
        "comparison": None if run.comparison is None else run.comparison.to_dict(),
    }
