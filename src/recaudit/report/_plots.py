"""The report's figures, as inline SVG built with :mod:`._svg`.

Each function takes loaded results and returns one ``<svg>`` element. Colours:
Okabe-Ito for categories (models, groups, tests), a cividis ramp for ordered values
(temperature, selection rate). Every data mark carries a hover title with its exact
value and CI.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from .._stats import Estimate
from ..audit import SequentialCell
from ..fairness import FairnessEvaluation
from ..positional import PowerRow
from ._load_positional import Configuration
from ._page import NAN_ESTIMATE, HasCI
from ._svg import BandScale, Canvas, LinearScale, Panel, nice_ticks, text_width

__all__ = [
    "OKABE_ITO",
    "coverage_popularity",
    "discards",
    "e_value_paths",
    "group_bars",
    "long_tail",
    "metric_lines",
    "noise_floor",
    "pareto_front",
    "position_distribution",
    "power_curves",
    "selection_heatmaps",
    "tradeoff",
]

#: Okabe & Ito (2008) colour-blind-safe palette, darkest first so lines stay visible.
OKABE_ITO = ("#0072B2", "#D55E00", "#009E73", "#E69F00", "#CC79A7", "#56B4E9", "#000000", "#F0E442")
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
_CIVIDIS = (
    (0.0, (0, 32, 77)),
    (0.25, (65, 77, 107)),
    (0.5, (124, 123, 120)),
    (0.75, (188, 175, 111)),
    (1.0, (255, 234, 70)),
)
_GREY = "#555555"
_WIDTH = 1100.0


def _style_of(index: int) -> tuple[str, str]:
    """Colour and marker of the ``index``-th model (colours first, then markers)."""
    return OKABE_ITO[index % len(OKABE_ITO)], _MARKERS[(index // len(OKABE_ITO)) % len(_MARKERS)]


def _short(label: str, limit: int = 36) -> str:
    """``label`` cut to ``limit`` characters for axes and legends (hover titles keep it whole)."""
    return label if len(label) <= limit else label[: limit - 1] + "\u2026"


def _cividis(t: float) -> str:
    """Colour of ``t`` in [0, 1] on the cividis ramp (perceptually uniform, CVD-safe)."""
    t = min(max(t, 0.0), 1.0) if math.isfinite(t) else 0.0
    for (t0, c0), (t1, c1) in zip(_CIVIDIS, _CIVIDIS[1:], strict=False):
        if t <= t1:
            f = (t - t0) / (t1 - t0)
            return "#" + "".join(
                f"{round(a + f * (b - a)):02X}" for a, b in zip(c0, c1, strict=True)
            )
    return "#FFEA46"


def _shades(n: int) -> list[str]:
    """``n`` ordered colours, dark to light, staying readable on white."""
    return [_cividis(0.7 * i / max(n - 1, 1)) for i in range(n)]


def _fmt(est: HasCI) -> str:
    def f(x: float) -> str:
        return f"{x:.3f}" if math.isfinite(x) else "n/a"

    if math.isfinite(est.ci.low) and math.isfinite(est.ci.high):
        return f"{f(est.value)} [{f(est.ci.low)}, {f(est.ci.high)}]"
    return f(est.value)


def _domain(
    values: Sequence[float], *, include: Sequence[float] = (0.0,), pad: float = 0.0
) -> tuple[float, float]:
    """A rounded data range covering ``values`` and ``include``."""
    finite = [v for v in [*values, *include] if math.isfinite(v)] or [0.0, 1.0]
    lo, hi = min(finite), max(finite)
    span = (hi - lo) or (abs(hi) or 1.0)
    lo, hi = lo - pad * span, hi + pad * span
    ticks = nice_ticks(lo, hi)
    step = ticks[1] - ticks[0] if len(ticks) > 1 else 1.0
    return math.floor(lo / step + 1e-9) * step, math.ceil(hi / step - 1e-9) * step


def _values(ests: Sequence[HasCI]) -> list[float]:
    return [v for e in ests for v in (e.value, e.ci.low, e.ci.high)]


def _frame(
    n: int,
    *,
    ncols: int,
    height: float,
    legend: Sequence[tuple[str, str, str, str]] = (),
    left: float = 62,
    bottom: float = 48,
    hgap: float = 56,
    vgap: float = 66,
    width: float = _WIDTH,
) -> tuple[Canvas, list[tuple[float, float, float, float]]]:
    """A canvas with ``n`` panel boxes on a grid and the legend on top."""
    ncols = max(1, min(ncols, n))
    nrows = math.ceil(n / ncols)
    pw = (width - left - 18 - (ncols - 1) * hgap) / ncols
    canvas = Canvas(width, 0)
    top = (canvas.legend(legend) if legend else 0) + 30
    boxes = [
        (left + (i % ncols) * (pw + hgap), top + (i // ncols) * (height + vgap), pw, height)
        for i in range(n)
    ]
    canvas.height = top + nrows * height + (nrows - 1) * vgap + bottom
    return canvas, boxes


def _lin(
    box: tuple[float, float, float, float],
    xd: tuple[float, float],
    yd: tuple[float, float],
    *,
    ylog: bool = False,
) -> tuple[LinearScale, LinearScale]:
    left, top, w, h = box
    return (
        LinearScale(xd[0], xd[1], left, left + w),
        LinearScale(yd[0], yd[1], top + h, top, log=ylog),
    )


def _ci_point(
    p: Panel,
    x: float,
    est: HasCI,
    *,
    color: str,
    kind: str = "o",
    title: str,
    fill: str | None = None,
    r: float = 3.3,
) -> None:
    p.errorbar(x, est.value, est.ci.low, est.ci.high, color=color)
    p.point(x, est.value, color=color, kind=kind, fill=fill, r=r, title=f"{title}: {_fmt(est)}")


def _model_legend(
    models: Sequence[str], colors: Mapping[str, int]
) -> list[tuple[str, str, str, str]]:
    return [(_style_of(colors[m])[1], _style_of(colors[m])[0], "", _short(m)) for m in models]


# --------------------------------------------------------------------- positional
def position_distribution(
    by_model: Mapping[str, Sequence[Configuration]], *, k: int, fig_id: str
) -> str:
    """Share of selections per prompt position, one panel per model, dodged by T."""
    temps = sorted({g.temperature for gs in by_model.values() for g in gs})
    shades = _shades(len(temps))
    legend = [("o", c, "", f"T = {t:g}") for t, c in zip(temps, shades, strict=True)]
    legend.append(("--", _GREY, "", f"uniform 1/k = {1 / k:.3g}"))
    canvas, boxes = _frame(len(by_model), ncols=4, height=150, legend=legend)
    yd = _domain(
        [v for gs in by_model.values() for g in gs for v in _values(g.position_distribution)],
        include=(0.0, 1 / k),
    )
    width = 0.7 / len(temps)
    for i, (box, (model, groups)) in enumerate(zip(boxes, by_model.items(), strict=True)):
        x, y = _lin(box, (0.5, k + 0.5), yd)
        p = canvas.panel(
            box,
            x,
            y,
            title=_short(model),
            xlabel="prompt position",
            ylabel="share of selections" if i % 4 == 0 else "",
        )
        p.hline(1 / k)
        for g in groups:
            j = temps.index(g.temperature)
            for pos, est in enumerate(g.position_distribution, start=1):
                _ci_point(
                    p,
                    pos + (j - (len(temps) - 1) / 2) * width,
                    est,
                    color=shades[j],
                    r=2.6,
                    title=f"{model}, T={g.temperature:g}, position {pos}",
                )
    return canvas.svg(fig_id)


def selection_heatmaps(groups: Sequence[Configuration], *, k: int, fig_id: str) -> str:
    """k x k selection rates (original index x prompt position), one panel per model."""
    finite = [v for g in groups for row in g.selection_rate_matrix for v in row if math.isfinite(v)]
    vmax = max(finite, default=1.0) or 1.0
    side = 200.0
    canvas, boxes = _frame(len(groups), ncols=4, height=side, hgap=62, width=_WIDTH - 70)
    canvas.width = _WIDTH
    for box, g in zip(boxes, groups, strict=True):
        left, top, w, _ = box
        box = (left, top, min(w, side), side)
        x, y = _lin(box, (0.5, k + 0.5), (k + 0.5, 0.5))
        p = canvas.panel(
            box,
            x,
            y,
            title=_short(g.model),
            xlabel="prompt position",
            ylabel="original index",
            grid=False,
        )
        for i, row in enumerate(g.selection_rate_matrix, start=1):
            for pos, v in enumerate(row, start=1):
                label = f"{v:.3f}" if math.isfinite(v) else "never shown"
                p.rect(
                    pos - 0.5,
                    i - 0.5,
                    pos + 0.5,
                    i + 0.5,
                    color=_cividis(v / vmax) if math.isfinite(v) else "#ffffff",
                    title=f"{g.model}: index {i} at position {pos}: {label}",
                )
                if k <= 5 and math.isfinite(v):
                    p.text(
                        pos,
                        i,
                        f"{v:.2f}",
                        anchor="middle",
                        dy=3.5,
                        size=9,
                        color="#ffffff" if v < vmax / 2 else "#000000",
                    )
    # colour bar
    bx, by, bh = _WIDTH - 50, boxes[0][1], side
    for s in range(40):
        canvas.raw(
            f'<rect x="{bx}" y="{by + bh * (1 - (s + 1) / 40):.1f}" width="12" '
            f'height="{bh / 40 + 0.3:.1f}" fill="{_cividis((s + 0.5) / 40)}"/>'
        )
    scale = LinearScale(0, vmax, by + bh, by)
    for v, label in scale.ticks():
        canvas.text(bx + 16, scale(v) + 3.5, label, size=9.5)
    canvas.text(bx - 4, by - 8, "rate", size=10)
    return canvas.svg(fig_id)


def metric_lines(
    groups: Sequence[Configuration], *, colors: Mapping[str, int], fig_id: str
) -> str:
    """PS, PB and sPB with CIs across models, k and temperature.

    The x axis is temperature when several were run (one column per k), else k, else
    the model itself (a dot plot).
    """
    temps = sorted({g.temperature for g in groups})
    ks = sorted({g.k for g in groups})
    models = list(dict.fromkeys(g.model for g in groups))
    facets: list[int | None]
    if len(temps) > 1:
        facets, xname, xs = list(ks), "temperature", temps
    elif len(ks) > 1:
        facets, xname, xs = [None], "k", [float(k) for k in ks]
    else:
        facets, xname, xs = [None], "model", []
    metrics = (("ps", "PS"), ("pb", "PB"), ("spb", "sPB"))
    ncols = len(facets)
    canvas, boxes = _frame(
        3 * ncols,
        ncols=ncols,
        height=150,
        vgap=50,
        legend=_model_legend(models, colors),
        bottom=48 + (max(text_width(_short(m)) for m in models) * 0.6 if xname == "model" else 0),
        width=min(_WIDTH, 300 + 260 * ncols),
    )
    for row, (attr, name) in enumerate(metrics):
        yd = _domain(_values([getattr(g, attr) for g in groups]))
        for col, facet in enumerate(facets):
            box = boxes[row * ncols + col]
            x: LinearScale | BandScale
            if xname == "model":
                x = BandScale(len(models), box[0], box[0] + box[2], tuple(map(_short, models)))
                y = _lin(box, (0, 1), yd)[1]
            else:
                pad = (xs[-1] - xs[0]) * 0.06
                x, y = _lin(box, (xs[0] - pad, xs[-1] + pad), yd)
            p = canvas.panel(
                box,
                x,
                y,
                title=f"{name}" + (f", k = {facet}" if facet is not None else ""),
                ylabel=name if col == 0 else "",
                xlabel=xname if row == 2 else "",
                rotate_x=xname == "model",
                show_x=row == 2 or xname == "model",
            )
            for m in models:
                color, kind = _style_of(colors[m])
                pts = sorted(
                    (g for g in groups if g.model == m and (facet is None or g.k == facet)),
                    key=lambda g: (g.temperature, g.k),
                )
                ests = [getattr(g, attr) for g in pts]
                if xname == "model":
                    for e in ests:
                        _ci_point(
                            p, models.index(m), e, color=color, kind=kind, title=f"{m} {name}"
                        )
                    continue
                xv = [g.temperature if xname == "temperature" else float(g.k) for g in pts]
                p.band(xv, [e.ci.low for e in ests], [e.ci.high for e in ests], color=color)
                p.line(xv, [e.value for e in ests], color=color)
                for xx, g, e in zip(xv, pts, ests, strict=True):
                    p.point(
                        xx,
                        e.value,
                        color=color,
                        kind=kind,
                        r=3,
                        title=f"{m}, k={g.k}, T={g.temperature:g}, {name}: {_fmt(e)}",
                    )
    return canvas.svg(fig_id)


def noise_floor(pairs: Sequence[tuple[Configuration, Configuration]], *, fig_id: str) -> str:
    """sPB of the audited condition beside its decoding-only noise floor, per k."""
    ks = sorted({a.k for a, _ in pairs})
    rows = list(dict.fromkeys((a.model, a.temperature) for a, _ in pairs))
    labels = tuple(f"{_short(m)}  T={t:g}" for m, t in rows)
    color = OKABE_ITO[1]
    legend = [
        ("o", color, "", "sPB, audited condition"),
        ("s", color, "#ffffff", "noise floor: decoding only, order fixed"),
    ]
    left = max(map(text_width, labels)) + 20
    canvas, boxes = _frame(
        len(ks), ncols=4, height=17 * len(rows) + 10, legend=legend, left=left, hgap=40
    )
    xd = _domain([v for a, b in pairs for v in _values([a.spb, b.spb])])
    for i, (box, k) in enumerate(zip(boxes, ks, strict=True)):
        x = _lin(box, xd, (0, 1))[0]
        y = BandScale(len(rows), box[1], box[1] + box[3], labels)
        p = canvas.panel(box, x, y, title=f"k = {k}", xlabel="sPB", show_y=i % 4 == 0)
        for a, b in (pair for pair in pairs if pair[0].k == k):
            r = rows.index((a.model, a.temperature))
            for offset, g, fill, kind in ((-0.17, a, None, "o"), (0.17, b, "#ffffff", "s")):
                p.errorbar(0, r + offset, g.spb.ci.low, g.spb.ci.high, color=color, horizontal=True)
                p.point(
                    g.spb.value,
                    r + offset,
                    color=color,
                    kind=kind,
                    fill=fill,
                    title=f"{g.label}: sPB {_fmt(g.spb)}",
                )
    return canvas.svg(fig_id)


def discards(
    counts: Mapping[str, Mapping[str, int]], generations: Mapping[str, int], *, fig_id: str
) -> str:
    """Discarded generations per model, as a share of all its generations, by reason."""
    models = list(counts)
    reasons = sorted({r for c in counts.values() for r in c})
    colors = {r: OKABE_ITO[(j + 3) % len(OKABE_ITO)] for j, r in enumerate(reasons)}
    shares = {m: 100 * sum(counts[m].values()) / max(generations.get(m, 0), 1) for m in models}
    left = max(text_width(_short(m)) for m in models) + 16
    canvas, boxes = _frame(
        1,
        ncols=1,
        height=22 * len(models) + 8,
        left=left,
        legend=[("#", colors[r], "", r) for r in reasons],
    )
    box = boxes[0]
    x = _lin(box, (0, max(_domain(list(shares.values()))[1] * 1.3, 1.0)), (0, 1))[0]
    y = BandScale(len(models), box[1], box[1] + box[3], tuple(map(_short, models)))
    p = canvas.panel(box, x, y, xlabel="% of generations discarded")
    for i, m in enumerate(models):
        start = 0.0
        for r in reasons:
            share = 100 * counts[m].get(r, 0) / max(generations.get(m, 0), 1)
            if share:
                p.rect(
                    start,
                    i - 0.3,
                    start + share,
                    i + 0.3,
                    color=colors[r],
                    title=f"{m}: {counts[m][r]} {r} ({share:.1f}%)",
                )
            start += share
        p.text(
            shares[m],
            i,
            f"{sum(counts[m].values())} of {generations.get(m, 0)} ({shares[m]:.1f}%)",
            dx=6,
            dy=4,
        )
    return canvas.svg(fig_id)


def power_curves(rows: Sequence[PowerRow], *, alpha: float, fig_id: str) -> str:
    """Rejection rate against p_bias per test; panels by k (columns) and queries (rows)."""
    ks = sorted({r.k for r in rows})
    queries = sorted({r.queries for r in rows})
    tests = sorted({r.test for r in rows})
    legend = [(_style_of(i)[1], _style_of(i)[0], "", t) for i, t in enumerate(tests)]
    legend += [("--", _GREY, "", "80% power"), (":", _GREY, "", f"alpha = {alpha:g}")]
    canvas, boxes = _frame(
        len(ks) * len(queries), ncols=len(ks), height=130, legend=legend, left=76, vgap=52
    )
    xd = _domain([r.p_bias for r in rows])
    for qi, q in enumerate(queries):
        for ki, k in enumerate(ks):
            box = boxes[qi * len(ks) + ki]
            x, y = _lin(box, xd, (0, 1))
            p = canvas.panel(
                box,
                x,
                y,
                title=f"k = {k}, {q} queries",
                xlabel="p_bias" if qi == len(queries) - 1 else "",
                ylabel="rejection rate" if ki == 0 else "",
            )
            p.hline(0.8, dash="5 3")
            p.hline(alpha, dash="1.5 2.5")
            for ti, test in enumerate(tests):
                color, kind = _style_of(ti)
                pts = sorted(
                    (r for r in rows if (r.test, r.k, r.queries) == (test, k, q)),
                    key=lambda r: r.p_bias,
                )
                est = [r.rejection for r in pts]
                xv = [r.p_bias for r in pts]
                p.band(xv, [e.ci.low for e in est], [e.ci.high for e in est], color=color)
                p.line(xv, [e.value for e in est], color=color)
                for r in pts:
                    p.point(
                        r.p_bias,
                        r.rejection_rate,
                        color=color,
                        kind=kind,
                        r=2.8,
                        title=f"{test}, k={k}, {q} queries, p_bias={r.p_bias:g}: "
                        f"{_fmt(r.rejection)} ({r.reps} reps)",
                    )
    return canvas.svg(fig_id)


def e_value_paths(
    cells: Sequence[SequentialCell], *, alpha_per_cell: float, fig_id: str
) -> str:
    """log10 E against valid evaluations, one line per sequential cell; threshold line.

    ``cells`` are the cells of ``sequential.json`` (their evidence's ``checkpoints`` and
    ``log_e_path``, their ``decision``); a cell that rejected ends in a filled marker at
    its stop, a cell without evidence yet draws no line.
    """
    threshold = math.log10(1.0 / alpha_per_cell)
    paths = []
    for c in cells:
        ev = c.evidence
        xs = [] if ev is None else [float(v) for v in ev.checkpoints]
        ys = [] if ev is None else [v / math.log(10) for v in ev.log_e_path]
        label = f"{c.model}, k={c.k}, T={c.temperature:g}, {c.condition}"
        paths.append((label, xs, ys, c.decision))
    legend = [(_style_of(i)[1], _style_of(i)[0], "", _short(label))
              for i, (label, *_rest) in enumerate(paths)]
    legend += [("--", _GREY, "", f"rejection threshold 1/alpha = {1 / alpha_per_cell:.3g}")]
    canvas, boxes = _frame(1, ncols=1, height=260, legend=legend, left=70)
    all_x = [x for _, xs, _, _ in paths for x in xs] or [0.0, 1.0]
    all_y = [y for _, _, ys, _ in paths for y in ys] + [threshold, 0.0]
    x, y = _lin(boxes[0], _domain([0.0, *all_x]), _domain(all_y))
    p = canvas.panel(boxes[0], x, y, title="Sequential evidence per cell",
                     xlabel="valid evaluations", ylabel="log10 E-value")
    p.hline(threshold, dash="5 3")
    p.hline(0.0, dash="1.5 2.5")
    for i, (label, xs, ys, decision) in enumerate(paths):
        color, kind = _style_of(i)
        p.line(xs, ys, color=color)
        for j, (a, b) in enumerate(zip(xs, ys, strict=True)):
            last = j == len(xs) - 1
            p.point(a, b, color=color, kind=kind, r=3.2 if last else 2.2,
                    fill=None if (last and decision == "rejected") else "white",
                    title=f"{label}: E = {10 ** b:.3g} after {a:g} valid evaluations"
                    + (f" ({decision})" if last else ""))
    return canvas.svg(fig_id)


# ----------------------------------------------------------------------- fairness
def group_bars(
    models: Mapping[str, FairnessEvaluation], *, n: int, metrics: Sequence[str], fig_id: str
) -> str:
    """Per-group metric@n with CIs, bars per group, one panel per metric."""
    groups = list(next(iter(models.values())).groups)
    names = tuple(_short(name) for name in models)
    colors = {g: OKABE_ITO[(j + 4) % len(OKABE_ITO)] for j, g in enumerate(groups)}
    labels = max(map(text_width, names)) * 0.6  # rotated model names below each panel
    canvas, boxes = _frame(
        len(metrics),
        ncols=3,
        height=150,
        vgap=40 + labels,
        bottom=30 + labels,
        legend=[("#", colors[g], "", g) for g in groups],
    )
    missing = NAN_ESTIMATE
    width = 0.8 / len(groups)
    for box, metric in zip(boxes, metrics, strict=True):
        key = f"{metric}@{n}"
        ests = [ev.groups[g].metrics.get(key, missing) for ev in models.values() for g in groups]
        x = BandScale(len(models), box[0], box[0] + box[2], names)
        y = _lin(box, (0, 1), _domain(_values(ests)))[1]
        p = canvas.panel(box, x, y, title=f"{metric}@{n}", rotate_x=True)
        for i, (name, ev) in enumerate(models.items()):
            for j, g in enumerate(groups):
                est = ev.groups[g].metrics.get(key, missing)
                c = i + (j - (len(groups) - 1) / 2) * width
                p.rect(
                    c - width * 0.46,
                    0,
                    c + width * 0.46,
                    est.value,
                    color=colors[g],
                    title=f"{name}, group {g}, {metric}@{n}: {_fmt(est)}",
                )
                p.errorbar(c, est.value, est.ci.low, est.ci.high, color="#222222", cap=1.8)
    return canvas.svg(fig_id)


def coverage_popularity(
    models: Mapping[str, FairnessEvaluation],
    popularity: Mapping[str, Mapping[int, Estimate]],
    *,
    ns: Sequence[int],
    colors: Mapping[str, int],
    fig_id: str,
) -> str:
    """Item coverage against average popularity of the recommended items, per N.

    ``popularity``: model -> N -> average popularity with its CI (the results hold
    the value only; the loader reads a CI from the JSON when it has one).
    """
    canvas, boxes = _frame(
        len(ns), ncols=3, height=190, legend=_model_legend(list(models), colors)
    )
    for i, (box, n) in enumerate(zip(boxes, ns, strict=True)):
        coverage = {name: ev.item_coverage[n].value for name, ev in models.items()}
        xd = _domain(_values([popularity[name][n] for name in models]), include=(), pad=0.08)
        yd = _domain(list(coverage.values()), include=(), pad=0.08)
        x, y = _lin(box, xd, yd)
        p = canvas.panel(
            box,
            x,
            y,
            title=f"N = {n}",
            xlabel="average popularity of recommended items",
            ylabel="item coverage" if i % 3 == 0 else "",
        )
        for name in models:
            color, kind = _style_of(colors[name])
            est = popularity[name][n]
            p.errorbar(0, coverage[name], est.ci.low, est.ci.high, color=color, horizontal=True)
            p.point(
                est.value,
                coverage[name],
                color=color,
                kind=kind,
                r=4.5,
                title=f"{name}, N={n}: coverage {coverage[name]:.3f}, popularity {_fmt(est)}",
            )
    return canvas.svg(fig_id)


def pareto_front(points: Sequence[tuple[float, float]]) -> list[int]:
    """Indices of the points no other point beats on both axes (low x, high y).

    Points are ``(bias, accuracy)``; the front is returned in increasing bias.
    """
    order = sorted(
        (i for i, (x, y) in enumerate(points) if math.isfinite(x) and math.isfinite(y)),
        key=lambda i: (points[i][0], -points[i][1]),
    )
    front: list[int] = []
    for i in order:
        if not front or points[i][1] > points[front[-1]][1]:
            front.append(i)
    return front


def tradeoff(
    models: Mapping[str, FairnessEvaluation],
    *,
    ns: Sequence[int],
    metric: str,
    colors: Mapping[str, int],
    fig_id: str,
) -> str:
    """Accuracy (overall metric@N) against IB-metric@N, Pareto front marked."""
    legend = _model_legend(list(models), colors)
    legend.append(("--", _GREY, "", "Pareto front (black outline)"))
    canvas, boxes = _frame(len(ns), ncols=3, height=190, legend=legend)
    for i, (box, n) in enumerate(zip(boxes, ns, strict=True)):
        ib = [ev.inter_bias[f"{metric}@{n}"].ib for ev in models.values()]
        acc = [ev.overall[f"{metric}@{n}"] for ev in models.values()]
        x, y = _lin(
            box,
            _domain(_values(ib), include=(), pad=0.08),
            _domain(_values(acc), include=(), pad=0.08),
        )
        p = canvas.panel(
            box,
            x,
            y,
            title=f"N = {n}",
            xlabel=f"IB-{metric}@{n} (lower is fairer)",
            ylabel=f"{metric}@N (higher is better)" if i % 3 == 0 else "",
        )
        front = pareto_front([(b.value, a.value) for b, a in zip(ib, acc, strict=True)])
        steps_x: list[float] = []
        steps_y: list[float] = []
        for j in front:
            if steps_x:
                steps_x.append(ib[j].value)
                steps_y.append(steps_y[-1])
            steps_x.append(ib[j].value)
            steps_y.append(acc[j].value)
        p.line(steps_x, steps_y, color=_GREY, dash="5 3", width=1.2)
        for j, name in enumerate(models):
            color, kind = _style_of(colors[name])
            p.errorbar(0, acc[j].value, ib[j].ci.low, ib[j].ci.high, color=color, horizontal=True)
            p.errorbar(ib[j].value, 0, acc[j].ci.low, acc[j].ci.high, color=color)
            p.point(
                ib[j].value,
                acc[j].value,
                color=color,
                kind=kind,
                r=5 if j in front else 4.2,
                stroke="#000000" if j in front else None,
                title=f"{name}, N={n}: {metric} {_fmt(acc[j])}, IB {_fmt(ib[j])}"
                + (" (Pareto front)" if j in front else ""),
            )
    return canvas.svg(fig_id)


def long_tail(counts: Sequence[int], *, head_share: float, fig_id: str) -> str:
    """Interactions per item by popularity rank (log scale), head items shaded."""
    n = len(counts)
    head = max(1, math.ceil(0.2 * n))
    canvas, boxes = _frame(1, ncols=1, height=220, left=70)
    box = boxes[0]
    lo = max(min(counts), 1)
    top = 10 ** math.ceil(math.log10(max(max(counts), 1) + 1e-9))
    x, y = _lin(box, (0.5, n + 0.5), (10 ** math.floor(math.log10(lo)), top), ylog=True)
    p = canvas.panel(box, x, y, xlabel="item popularity rank", ylabel="interactions (log scale)")
    p.rect(
        0.5,
        y.lo,
        head + 0.5,
        y.hi,
        color=OKABE_ITO[1],
        opacity=0.1,
        title=f"head: top 20% of items ({head}) hold {head_share:.1%} of interactions",
    )
    stride = max(1, n // 600)
    idx = sorted(set(range(0, n, stride)) | {n - 1})
    xs = [i + 1.0 for i in idx]
    ys = [float(max(counts[i], 1)) for i in idx]
    p.band(xs, [y.lo] * len(xs), ys, color=OKABE_ITO[5], opacity=0.35)
    p.line(xs, ys, color=OKABE_ITO[0], width=1.6)
    p.text(
        head + 0.5,
        y.hi,
        f"top 20% of items ({head}) hold {head_share:.0%} of interactions",
        dx=8,
        dy=16,
        size=11,
    )
    return canvas.svg(fig_id)
