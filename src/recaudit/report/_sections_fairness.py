"""The fairness report's sections, one builder per section, and its verdict.

Each builder takes the loaded :class:`FairnessRun` and returns one :class:`Section`;
numbers point into the sidecar that :func:`fairness_data` builds (``models/<i>/...``).
The headline metric is the first of :data:`METRIC_ORDER` the results have, at N = 10
(else the middle N).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from markupsafe import Markup

from . import _plots
from ._load_fairness import METRIC_ORDER, FairnessModel, FairnessRun
from ._page import NAN_ESTIMATE, Cell, Fig, Section, Table, ci_cell, ci_num, fmt, num, p_cell

__all__ = [
    "fairness_data",
    "fairness_verdict",
    "groups_section",
    "headline",
    "inter_bias_section",
    "long_tail_section",
    "tradeoff_section",
]


def _ns(models: Sequence[FairnessModel]) -> list[int]:
    return sorted({n for m in models for (_, n) in m.ib})


def _metrics(models: Sequence[FairnessModel]) -> list[str]:
    ns = _ns(models)
    return [m for m in METRIC_ORDER if any((m, n) in models[0].ib for n in ns)] or list(
        dict.fromkeys(name for name, _ in models[0].ib)
    )


def headline(run: FairnessRun) -> tuple[str, int]:
    """The headline metric and N."""
    ns = _ns(run.models)
    return _metrics(run.models)[0], 10 if 10 in ns else ns[len(ns) // 2]


def _fronts(run: FairnessRun) -> dict[int, list[int]]:
    """The accuracy-bias Pareto front at each N (indices of models)."""
    metric, _ = headline(run)
    return {
        n: _plots.pareto_front(
            [(m.ib[(metric, n)].value, m.overall[(metric, n)].value) for m in run.models]
        )
        for n in _ns(run.models)
    }


# ------------------------------------------------------------------------ verdict
def _gap_sentence(run: FairnessRun, metric: str, n: int) -> Markup:
    key = (metric, n)
    sig = [
        (i, m)
        for i, m in enumerate(run.models)
        if key in m.rd
        and (m.rd[key].pvalue_holm if math.isfinite(m.rd[key].pvalue_holm) else m.rd[key].pvalue)
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
            Markup("{} (RD = {})").format(
                m.name, ci_num(f"models/{i}/rd/{metric}@{n}", m.rd[key].estimate)
            )
            for i, m in sig
        ),
    )


def fairness_verdict(run: FairnessRun) -> Markup:
    """One paragraph in plain words (group sizes are quoted from the sidecar's summary)."""
    models = run.models
    metric, n = headline(run)
    front = _fronts(run)[n]
    groups = Markup(", ").join(
        Markup("{} ({} users)").format(g, num(f"summary/groups/{j}/n_users", c, str(c)))
        for j, (g, c) in enumerate(models[0].n_users.items())
    )
    key = (metric, n)
    ranked = sorted(range(len(models)), key=lambda i: models[i].ib[key].value)
    best, worst = ranked[0], ranked[-1]
    parts = [
        Markup("We compared {} model{} on the user groups {}{}. ").format(
            len(models), "s" if len(models) != 1 else "", groups,
            Markup(" (protected group: {})").format(run.protected) if run.protected else "",
        ),
        _gap_sentence(run, metric, n),
        Markup(
            "IB-{}@{} (higher = more combined bias) ranges from {} for {} to {} for {}. "
        ).format(
            metric, n,
            ci_num(f"models/{best}/ib/{metric}@{n}", models[best].ib[key]), models[best].name,
            ci_num(f"models/{worst}/ib/{metric}@{n}", models[worst].ib[key]),
            models[worst].name,
        ),
        Markup("On the accuracy-bias Pareto front: {}; {}.").format(
            ", ".join(models[i].name for i in front),
            "no single model is best on both"
            if len(front) > 1
            else "one model is both the most accurate and the least biased",
        ),
    ]
    return Markup("").join(parts)


# ----------------------------------------------------------------------- sections
def groups_section(run: FairnessRun) -> Section:
    """Quality per user group at the headline N."""
    models = run.models
    _, main_n = headline(run)
    group_names = list(models[0].group_metrics)
    bar_metrics = [
        m for m in METRIC_ORDER if any((m, main_n) in g for g in models[0].group_metrics.values())
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
    ns = _ns(run.models)
    nrd_rows, ib_rows = [], []
    for i, m in enumerate(run.models):
        for name in _metrics(run.models):
            nrd_row, ib_row = [Cell(m.name), Cell(name)], [Cell(m.name), Cell(name)]
            for n in ns:
                key = f"{name}@{n}"
                nrd_row.append(ci_cell(f"models/{i}/nrd/{key}", m.nrd.get((name, n), NAN_ESTIMATE)))
                rd = m.rd.get((name, n))
                nrd_row.append(
                    p_cell(f"models/{i}/rd/{key}", rd.pvalue, rd.pvalue_holm) if rd
                    else Cell("n/a")
                )
                ib_row.append(ci_cell(f"models/{i}/ib/{key}", m.ib.get((name, n), NAN_ESTIMATE)))
            nrd_rows.append(tuple(nrd_row))
            ib_rows.append(tuple(ib_row))
    return nrd_rows, ib_rows


def inter_bias_section(run: FairnessRun) -> Section:
    """NRD (with the permutation test of the group gap) and IB, every metric and N."""
    ns = _ns(run.models)
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
    rows = tuple(
        (
            Cell(m.name),
            ci_cell(f"models/{i}/overall/{metric}@{main_n}", m.overall[(metric, main_n)]),
            Cell(fmt(m.coverage[main_n]), f"models/{i}/item_coverage/{main_n}",
                 m.coverage[main_n]),
            ci_cell(f"models/{i}/avg_popularity/{main_n}", m.popularity[main_n])
            if main_n in m.popularity
            else Cell("n/a"),
        )
        for i, m in enumerate(run.models)
    )
    return Table(
        "tab-accuracy",
        f"Accuracy, coverage and popularity at N = {main_n}.",
        ("model", f"{metric}@{main_n} [95% CI]", f"item coverage@{main_n}",
         f"avg popularity@{main_n} [95% CI]"),
        rows,
    )


def tradeoff_section(run: FairnessRun) -> Section:
    """Coverage against popularity, and accuracy against inter-bias (Pareto front)."""
    models, ns = run.models, _ns(run.models)
    metric, main_n = headline(run)
    colors = {m.name: i for i, m in enumerate(models)}
    pop_ns = [n for n in ns if all(n in m.popularity and n in m.coverage for m in models)]
    figs = []
    if pop_ns:
        figs.append(Fig(
            "fig-coverage",
            "Item coverage against average popularity",
            "One point per model (x whiskers: 95% CI of the average popularity). Popularity "
            "bias shows as points in the lower right: the model recommends the same popular "
            "items to everyone, so coverage is low.",
            _plots.coverage_popularity(models, ns=pop_ns, colors=colors, fig_id="fig-coverage"),
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
def fairness_data(run: FairnessRun) -> dict[str, Any]:
    """The sidecar's fairness part: every number the sections show, by path."""
    models = run.models
    metric, main_n = headline(run)
    return {
        "alpha": run.alpha,
        "summary": {
            "groups": [{"name": g, "n_users": c} for g, c in models[0].n_users.items()],
        },
        "protected_group": run.protected,
        "headline": {"metric": metric, "n": main_n},
        "models": [m.to_dict() for m in models],
        "pareto_front": {
            f"{metric}@{n}": [models[i].name for i in f] for n, f in _fronts(run).items()
        },
        "long_tail": _long_tail_dict(run),
    }
