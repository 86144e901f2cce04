"""A small SVG plotting kit: figures made of panels with linear, log or band scales.

Why not matplotlib: see docs/decisions/. In short, the report draws a few hundred
panels for a large sweep; building them as strings takes milliseconds and gives exact
control over escaping (every string goes through :func:`esc`), determinism (no ids, no
dates, fixed number formatting) and styling (text inherits the page's font).
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

__all__ = [
    "BandScale",
    "Canvas",
    "LinearScale",
    "Panel",
    "esc",
    "marker",
    "nice_ticks",
    "text_width",
]

FONT = 11.0
_GRID = "#e6e6e6"
_AXIS = "#9aa0a6"
_INK = "#1d1d1f"


def esc(text: object) -> str:
    """Escape any value for SVG text or attribute content (``& < > " '``)."""
    return html.escape(str(text), quote=True)


def _n(x: float) -> str:
    """Coordinates with one decimal: small, stable output."""
    return f"{x:.1f}".rstrip("0").rstrip(".") if math.isfinite(x) else "0"


def text_width(text: str, size: float = FONT) -> float:
    """Approximate rendered width of ``text`` in px (DejaVu Sans averages ~0.6 em)."""
    return 0.6 * size * len(text)


def nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """Round tick values covering ``[lo, hi]`` with about ``n`` steps of 1, 2, 2.5 or 5."""
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return [lo] if math.isfinite(lo) else [0.0]
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(s * mag for s in (1, 2, 2.5, 5, 10) if s * mag >= raw)
    start = math.ceil(lo / step - 1e-9)
    ticks = []
    i = start
    while i * step <= hi + 1e-9 * step:
        ticks.append(round(i * step, 12))
        i += 1
    return ticks


def _fmt_tick(v: float, ticks: Sequence[float]) -> str:
    step = min((abs(b - a) for a, b in zip(ticks, ticks[1:], strict=False)), default=1.0)
    decimals = next((d for d in range(8) if abs(round(step, d) - step) < 1e-9), 8)
    return f"{v:.{decimals}f}"


@dataclass(frozen=True)
class LinearScale:
    """Maps data ``[lo, hi]`` to pixels ``[a, b]``; ``log=True`` maps log10 of the data."""

    lo: float
    hi: float
    a: float
    b: float
    log: bool = False

    def __call__(self, v: float) -> float:
        """Pixel position of ``v``."""
        f = math.log10 if self.log else float
        lo, hi, x = f(self.lo), f(self.hi), f(max(v, 1e-300) if self.log else v)
        return self.a + (x - lo) / ((hi - lo) or 1.0) * (self.b - self.a)

    def ticks(self) -> list[tuple[float, str]]:
        """Tick values and labels."""
        if self.log:
            e0, e1 = math.floor(math.log10(self.lo)), math.ceil(math.log10(self.hi))
            vals = [10.0**e for e in range(e0, e1 + 1) if self.lo <= 10.0**e <= self.hi]
            return [(v, f"{v:g}") for v in vals]
        vals = nice_ticks(min(self.lo, self.hi), max(self.lo, self.hi))
        return [(v, _fmt_tick(v, vals)) for v in vals]


@dataclass(frozen=True)
class BandScale:
    """Maps categories ``0..n-1`` to the centres of ``n`` equal bands in ``[a, b]``."""

    n: int
    a: float
    b: float
    labels: tuple[str, ...] = ()

    @property
    def bandwidth(self) -> float:
        """Width of one band in px."""
        return (self.b - self.a) / max(self.n, 1)

    def __call__(self, v: float) -> float:
        """Pixel centre of category ``v`` (fractional ``v`` dodges inside a band)."""
        return self.a + (v + 0.5) * self.bandwidth

    def ticks(self) -> list[tuple[float, str]]:
        """One tick per category."""
        return [(float(i), label) for i, label in enumerate(self.labels)]


Scale = LinearScale | BandScale

#: Marker outlines as polygons in units of the marker radius (y grows downwards).
_SHAPES: dict[str, tuple[tuple[float, float], ...]] = {
    "s": ((-1, -1), (1, -1), (1, 1), (-1, 1)),
    "^": ((0, -1.2), (1.1, 0.8), (-1.1, 0.8)),
    "D": ((0, -1.3), (1.1, 0), (0, 1.3), (-1.1, 0)),
    "v": ((0, 1.2), (1.1, -0.8), (-1.1, -0.8)),
    "P": (
        (-1, -0.35),
        (-0.35, -0.35),
        (-0.35, -1),
        (0.35, -1),
        (0.35, -0.35),
        (1, -0.35),
        (1, 0.35),
        (0.35, 0.35),
        (0.35, 1),
        (-0.35, 1),
        (-0.35, 0.35),
        (-1, 0.35),
    ),
    "X": ((-1, -1), (1, 1), (0, 0), (1, -1), (-1, 1), (0, 0)),
    "*": (
        (0, -1.3),
        (0.4, -0.3),
        (1.3, -0.3),
        (0.6, 0.3),
        (0.9, 1.3),
        (0, 0.7),
        (-0.9, 1.3),
        (-0.6, 0.3),
        (-1.3, -0.3),
        (-0.4, -0.3),
    ),
}


def marker(
    kind: str,
    x: float,
    y: float,
    *,
    color: str,
    r: float = 3.5,
    fill: str | None = None,
    title: str = "",
    stroke: str | None = None,
) -> str:
    """One marker (``o s ^ D v P X *``) with an optional hover title."""
    if kind == "o":
        tag, shape = "circle", f'cx="{_n(x)}" cy="{_n(y)}" r="{_n(r)}"'
    else:
        points = " ".join(f"{_n(x + dx * r)},{_n(y + dy * r)}" for dx, dy in _SHAPES[kind])
        tag, shape = "polygon", f'points="{points}"'
    if kind == "X":  # a cross is drawn by its stroke
        paint = f'fill="none" stroke="{color}" stroke-width="2.4"'
    else:
        paint = f'fill="{fill or color}" stroke="{stroke or color}"'
    if title:
        return f"<{tag} {shape} {paint}><title>{esc(title)}</title></{tag}>"
    return f"<{tag} {shape} {paint}/>"


@dataclass
class Panel:
    """One plotting area; draw with its methods, in data coordinates."""

    x: Scale
    y: Scale
    parts: list[str] = field(default_factory=list)

    def line(
        self,
        xs: Sequence[float],
        ys: Sequence[float],
        *,
        color: str,
        width: float = 1.6,
        dash: str = "",
    ) -> None:
        """A polyline through the finite points."""
        pts = [
            f"{_n(self.x(a))},{_n(self.y(b))}"
            for a, b in zip(xs, ys, strict=True)
            if math.isfinite(a) and math.isfinite(b)
        ]
        if len(pts) > 1:
            d = f' stroke-dasharray="{dash}"' if dash else ""
            self.parts.append(
                f'<polyline points="{" ".join(pts)}" fill="none" stroke="{color}" '
                f'stroke-width="{width}"{d}/>'
            )

    def band(
        self,
        xs: Sequence[float],
        lo: Sequence[float],
        hi: Sequence[float],
        *,
        color: str,
        opacity: float = 0.16,
    ) -> None:
        """A filled band between ``lo`` and ``hi`` (a CI band)."""
        keep = [
            (a, b, c)
            for a, b, c in zip(xs, lo, hi, strict=True)
            if math.isfinite(a) and math.isfinite(b) and math.isfinite(c)
        ]
        if len(keep) > 1:
            top = [f"{_n(self.x(a))},{_n(self.y(c))}" for a, _, c in keep]
            bottom = [f"{_n(self.x(a))},{_n(self.y(b))}" for a, b, _ in reversed(keep)]
            self.parts.append(
                f'<polygon points="{" ".join(top + bottom)}" fill="{color}" '
                f'fill-opacity="{opacity}" stroke="none"/>'
            )

    def errorbar(
        self,
        x: float,
        y: float,
        lo: float,
        hi: float,
        *,
        color: str,
        horizontal: bool = False,
        cap: float = 2.5,
    ) -> None:
        """A CI whisker from ``lo`` to ``hi`` at ``x`` (or at ``y`` when horizontal)."""
        if not (math.isfinite(lo) and math.isfinite(hi)):
            return
        if horizontal:
            py, a, b = self.y(y), self.x(lo), self.x(hi)
            d = (
                f"M{_n(a)},{_n(py)}H{_n(b)}M{_n(a)},{_n(py - cap)}V{_n(py + cap)}"
                f"M{_n(b)},{_n(py - cap)}V{_n(py + cap)}"
            )
        else:
            px, a, b = self.x(x), self.y(lo), self.y(hi)
            d = (
                f"M{_n(px)},{_n(a)}V{_n(b)}M{_n(px - cap)},{_n(a)}H{_n(px + cap)}"
                f"M{_n(px - cap)},{_n(b)}H{_n(px + cap)}"
            )
        self.parts.append(f'<path d="{d}" stroke="{color}" stroke-width="1.1" fill="none"/>')

    def point(
        self,
        x: float,
        y: float,
        *,
        color: str,
        kind: str = "o",
        r: float = 3.5,
        fill: str | None = None,
        title: str = "",
        stroke: str | None = None,
    ) -> None:
        """A marker at ``(x, y)`` with a hover title."""
        if math.isfinite(x) and math.isfinite(y):
            self.parts.append(
                marker(
                    kind,
                    self.x(x),
                    self.y(y),
                    color=color,
                    r=r,
                    fill=fill,
                    title=title,
                    stroke=stroke,
                )
            )

    def rect(
        self,
        x0: float,
        y0: float,
        x1: float,
        y1: float,
        *,
        color: str,
        title: str = "",
        opacity: float = 1.0,
    ) -> None:
        """A filled rectangle between data corners."""
        if not all(math.isfinite(v) for v in (x0, y0, x1, y1)):
            return
        a, b = sorted((self.x(x0), self.x(x1)))
        c, d = sorted((self.y(y0), self.y(y1)))
        op = f' fill-opacity="{opacity}"' if opacity < 1 else ""
        tag = (
            f'<rect x="{_n(a)}" y="{_n(c)}" width="{_n(b - a)}" height="{_n(d - c)}" '
            f'fill="{color}" shape-rendering="crispEdges"{op}'
        )
        self.parts.append(f"{tag}><title>{esc(title)}</title></rect>" if title else f"{tag}/>")

    def hline(
        self, y: float, *, color: str = "#555555", dash: str = "5 3", width: float = 1.1
    ) -> None:
        """A horizontal reference line across the panel."""
        x0, x1 = self.x.a, self.x.b
        self.parts.append(
            f'<path d="M{_n(x0)},{_n(self.y(y))}H{_n(x1)}" stroke="{color}" '
            f'stroke-width="{width}" stroke-dasharray="{dash}"/>'
        )

    def text(
        self,
        x: float,
        y: float,
        s: str,
        *,
        anchor: str = "start",
        size: float = FONT - 1,
        color: str = _INK,
        dx: float = 0,
        dy: float = 0,
    ) -> None:
        """Text at a data position (pixel offsets ``dx``, ``dy``)."""
        self.parts.append(
            f'<text x="{_n(self.x(x) + dx)}" y="{_n(self.y(y) + dy)}" '
            f'text-anchor="{anchor}" font-size="{size}" fill="{color}">{esc(s)}</text>'
        )


class Canvas:
    """A figure: panels on a grid, axes, titles and a legend, serialised as ``<svg>``."""

    def __init__(self, width: float, height: float) -> None:
        self.width = width
        self.height = height
        self.parts: list[str | list[str]] = []

    def panel(
        self,
        box: tuple[float, float, float, float],
        x: Scale,
        y: Scale,
        *,
        title: str = "",
        xlabel: str = "",
        ylabel: str = "",
        rotate_x: bool = False,
        grid: bool = True,
        show_x: bool = True,
        show_y: bool = True,
    ) -> Panel:
        """Draw axes in ``box = (left, top, width, height)`` and return the panel.

        ``x`` and ``y`` must already map to the box's pixels.
        """
        left, top, w, h = box
        out = self.parts
        if grid:
            for v, _ in y.ticks() if isinstance(y, LinearScale) else []:
                out.append(f'<path d="M{_n(left)},{_n(y(v))}H{_n(left + w)}" stroke="{_GRID}"/>')
            for v, _ in x.ticks() if isinstance(x, LinearScale) else []:
                out.append(f'<path d="M{_n(x(v))},{_n(top)}V{_n(top + h)}" stroke="{_GRID}"/>')
        out.append(
            f'<path d="M{_n(left)},{_n(top)}V{_n(top + h)}H{_n(left + w)}" '
            f'stroke="{_AXIS}" fill="none"/>'
        )
        if show_x:
            for v, label in x.ticks():
                px = x(v)
                if rotate_x:
                    out.append(
                        f'<text transform="translate({_n(px + 3)},{_n(top + h + 8)}) rotate(-35)" '
                        f'text-anchor="end" font-size="{FONT - 1}">{esc(label)}</text>'
                    )
                else:
                    out.append(
                        f'<text x="{_n(px)}" y="{_n(top + h + 14)}" text-anchor="middle" '
                        f'font-size="{FONT - 1}">{esc(label)}</text>'
                    )
        if show_y:
            for v, label in y.ticks():
                out.append(
                    f'<text x="{_n(left - 5)}" y="{_n(y(v) + 3.5)}" text-anchor="end" '
                    f'font-size="{FONT - 1}">{esc(label)}</text>'
                )
        if title:
            out.append(
                f'<text x="{_n(left)}" y="{_n(top - 7)}" font-size="{FONT + 0.5}" '
                f'font-weight="bold">{esc(title)}</text>'
            )
        if xlabel and show_x:
            extra = 12 + (
                max((text_width(lbl, FONT - 1) for _, lbl in x.ticks()), default=0) * 0.58
                if rotate_x
                else 16
            )
            out.append(
                f'<text x="{_n(left + w / 2)}" y="{_n(top + h + extra + 4)}" text-anchor="middle" '
                f'font-size="{FONT}" fill="#444">{esc(xlabel)}</text>'
            )
        if ylabel and show_y:
            width = max((text_width(lbl, FONT - 1) for _, lbl in y.ticks()), default=0)
            cx, cy = left - width - 16, top + h / 2
            out.append(
                f'<text transform="translate({_n(cx)},{_n(cy)}) rotate(-90)" text-anchor="middle" '
                f'font-size="{FONT}" fill="#444">{esc(ylabel)}</text>'
            )
        panel = Panel(x, y)
        out.append(panel.parts)  # drawn into later, joined in svg()
        return panel

    def legend(
        self, items: Sequence[tuple[str, str, str, str]], *, top: float = 6, left: float = 10
    ) -> float:
        """Legend rows of ``(kind, colour, fill, label)``; kind is a marker or ``-``/``--``/``:``
        for a line, or ``#`` for a swatch. Returns the height it took."""
        x, y = left, top + 10
        for kind, color, fill, label in items:
            w = 26 + text_width(label)
            if x + w > self.width - 10 and x > left:
                x, y = left, y + 18
            if kind in {"-", "--", ":"}:
                dash = {
                    "-": "",
                    "--": ' stroke-dasharray="5 3"',
                    ":": ' stroke-dasharray="1.5 2.5"',
                }[kind]
                self.parts.append(
                    f'<path d="M{_n(x)},{_n(y)}h18" stroke="{color}" stroke-width="1.6"{dash}/>'
                )
            elif kind == "#":
                self.parts.append(
                    f'<rect x="{_n(x + 3)}" y="{_n(y - 6)}" width="12" height="12" fill="{color}"/>'
                )
            else:
                self.parts.append(marker(kind, x + 9, y, color=color, fill=fill))
            self.parts.append(
                f'<text x="{_n(x + 22)}" y="{_n(y + 4)}" font-size="{FONT}">{esc(label)}</text>'
            )
            x += w + 14
        return y + 12 - top

    def text(
        self,
        x: float,
        y: float,
        s: str,
        *,
        anchor: str = "start",
        size: float = FONT,
        color: str = _INK,
    ) -> None:
        """Text at a pixel position."""
        self.parts.append(
            f'<text x="{_n(x)}" y="{_n(y)}" text-anchor="{anchor}" font-size="{size}" '
            f'fill="{color}">{esc(s)}</text>'
        )

    def raw(self, fragment: str) -> None:
        """Append an already-escaped SVG fragment (built by this module)."""
        self.parts.append(fragment)

    def svg(self, fig_id: str) -> str:
        """The ``<svg>`` element, captioned by ``{fig_id}-cap``."""
        body = "\n".join("\n".join(p) if isinstance(p, list) else p for p in self.parts)
        return (
            f'<svg class="plot" role="img" aria-labelledby="{esc(fig_id)}-cap" '
            f'xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {_n(self.width)} {_n(self.height)}" '
            f'width="{_n(self.width)}" height="{_n(self.height)}" '
            'font-family="DejaVu Sans, sans-serif" '
            f'fill="{_INK}">\n{body}\n</svg>'
        )
