"""The popularity-bias figures of the fairness report, as inline SVG (:mod:`._svg`).

Both are paired bars with CIs, one panel per model: what the users are recommended
beside what they themselves consume --

- :func:`head_tail`: per user group, the share of the top-N lists from the long tail
  (APLT@N) beside the tail share of the same users' test items;
- :func:`popularity_groups`: per user popularity group (niche / diverse / blockbuster),
  the mean popularity of the users' training profiles beside the mean popularity of
  what they are recommended (ARP@N), the figure of Abdollahpouri et al. (2021).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ._page import HasCI
from ._plots import OKABE_ITO, _domain, _fmt, _frame, _lin, _short, _values
from ._svg import BandScale, text_width

__all__ = ["Pair", "head_tail", "popularity_groups"]

#: Colours of the two bars of a pair: the users' own side, then the recommendations.
_OWN, _RECOMMENDED = OKABE_ITO[5], OKABE_ITO[1]


@dataclass(frozen=True)
class Pair:
    """One band of a panel: the users' own figure and their recommendations' figure."""

    label: str
    own: HasCI
    recommended: HasCI


def _paired_bars(
    panels: Mapping[str, Sequence[Pair]],
    *,
    names: tuple[str, str],
    ylabel: str,
    fig_id: str,
) -> str:
    """One panel per key of ``panels``; per band two bars with CI whiskers.

    ``names``: the legend (and hover) names of the own and the recommended bar.
    """
    longest = max((text_width(_short(p.label)) for ps in panels.values() for p in ps), default=0)
    labels = longest * 0.6
    canvas, boxes = _frame(
        len(panels), ncols=3, height=160, vgap=44 + labels, bottom=34 + labels,
        legend=[("#", _OWN, "", names[0]), ("#", _RECOMMENDED, "", names[1])],
    )
    for i, (box, (model, pairs)) in enumerate(zip(boxes, panels.items(), strict=True)):
        x = BandScale(len(pairs), box[0], box[0] + box[2], tuple(_short(p.label) for p in pairs))
        ests = [e for p in pairs for e in (p.own, p.recommended)]
        y = _lin(box, (0, 1), _domain(_values(ests)))[1]
        panel = canvas.panel(box, x, y, title=_short(model), rotate_x=True,
                             ylabel=ylabel if i % 3 == 0 else "")
        for j, pair in enumerate(pairs):
            for offset, est, color, name in (
                (-0.2, pair.own, _OWN, names[0]),
                (0.2, pair.recommended, _RECOMMENDED, names[1]),
            ):
                c = j + offset
                panel.rect(c - 0.18, 0, c + 0.18, est.value, color=color,
                           title=f"{model}, {pair.label}: {name} {_fmt(est)}")
                panel.errorbar(c, est.value, est.ci.low, est.ci.high, color="#222222", cap=1.8)
    return canvas.svg(fig_id)


def head_tail(panels: Mapping[str, Sequence[Pair]], *, n: int, fig_id: str) -> str:
    """Per model and user group: test items' tail share beside APLT@n."""
    return _paired_bars(
        panels,
        names=("tail share of the users' test items", f"APLT@{n}: tail share of the lists"),
        ylabel="share from the long tail",
        fig_id=fig_id,
    )


def popularity_groups(panels: Mapping[str, Sequence[Pair]], *, n: int, fig_id: str) -> str:
    """Per model and popularity group: profile popularity beside ARP@n."""
    return _paired_bars(
        panels,
        names=("users' profiles (training items)", f"ARP@{n}: recommended items"),
        ylabel="mean item popularity",
        fig_id=fig_id,
    )
