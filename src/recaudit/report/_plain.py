"""The positional verdict in plain words, generated from the numbers.

Two short paragraphs a reader without the statistics can act on, before any acronym:

1. **What the model did by prompt position, and whether that is more than chance**:
   "The model picked the candidate shown first in 74% of its answers and the one
   shown last in 26%; it never picked positions 2-4. With no preference for a
   position, each of the 5 would get 20%. This is more than chance: ..." -- the two
   tests named in words, their p-values after.
2. **How much position decided**, reconciling the three numbers of size: the
   position-driven share (the answers position made), its split into strong bias
   (sPB) and soft bias, and PB, with how PB relates to the share and to the raw
   distance of the shares from even (the plug-in TV).

The same words serve the HTML page (every number tagged with its sidecar path by
:class:`HtmlWords`) and the terminal (:class:`TextWords`, through
:func:`recaudit.report.plain_summary`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from markupsafe import Markup

from ..positional import IDENTITY_ORDER, GroupedAnalysis
from ._load_positional import Configuration, configurations
from ._page import HasCI, fmt, fmt_ci, fmt_p, num

__all__ = [
    "DECODING",
    "HtmlWords",
    "TextWords",
    "Words",
    "chance_sentence",
    "headline_configuration",
    "how_much_paragraph",
    "ordinal",
    "pct",
    "permuted_configurations",
    "plain_summary",
    "position_sentence",
    "unidentified_reason",
]

#: The condition of sPB's noise floor (the candidate order fixed, decoding noise only).
DECODING = "decoding"
_ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth",
             "ninth", "tenth")
#: Two estimates closer than this print as the same number (three decimals).
_SAME = 5e-4
NBSP = "\u00a0"
#: Most positions named one by one in the position sentence (the others are summed up).
MAX_NAMED = 3


class Words(Protocol):
    """How the sentences are written: tagged HTML or plain text."""

    def num(self, path: str, value: float, text: str) -> Any:
        """A number (``text``) that is ``value`` at ``path`` in the sidecar."""

    def fill(self, template: str, *args: Any) -> Any:
        """``template.format(*args)``, escaping the arguments when writing HTML."""

    def join(self, parts: Sequence[Any]) -> Any:
        """The parts, one after the other."""

    def term(self, text: str) -> Any:
        """A test's or metric's name (``POB-UNBP``), never split over lines."""

    def label(self, text: str) -> Any:
        """A paragraph's lead-in (``How much position decided:``)."""


class HtmlWords:
    """Sentences for the page: numbers tagged with their sidecar path, text escaped."""

    def num(self, path: str, value: float, text: str) -> Markup:
        return num(path, value, text)

    def fill(self, template: str, *args: Any) -> Markup:
        return Markup(template).format(*args)

    def join(self, parts: Sequence[Any]) -> Markup:
        return Markup("").join(parts)

    def term(self, text: str) -> Markup:
        return Markup('<span class="term">{}</span>').format(text)

    def label(self, text: str) -> Markup:
        return Markup("<strong>{}</strong>").format(text)


class TextWords:
    """Sentences for the terminal: plain text."""

    def num(self, path: str, value: float, text: str) -> str:
        return text

    def fill(self, template: str, *args: Any) -> str:
        return template.format(*args)

    def join(self, parts: Sequence[Any]) -> str:
        return "".join(str(p) for p in parts)

    def term(self, text: str) -> str:
        return text

    def label(self, text: str) -> str:
        return text


def pct(x: float) -> str:
    """A share in whole percent: ``74%``; ``<1%`` for a share above 0 that rounds to 0.

    >>> pct(0.74375), pct(0.004), pct(0.0), pct(1.0)
    ('74%', '<1%', '0%', '100%')
    """
    if not math.isfinite(x):
        return "n/a"
    if 0 < x < 0.005:
        return "<1%"
    return f"{100 * x:.0f}%"


def ordinal(p: int, k: int) -> str:
    """Where position ``p`` (1-based) of ``k`` is, in words: ``first``, ``last``,
    ``third``, ``in position 12``.

    >>> [ordinal(p, 5) for p in (1, 3, 5)], ordinal(12, 20)
    (['first', 'third', 'last'], 'in position 12')
    """
    if p == k and k > 1:
        return "last"
    return _ORDINALS[p - 1] if p <= len(_ORDINALS) else f"in position {p}"


def _positions(ps: Sequence[int]) -> str:
    """``position 3``, ``positions 2-4`` (a run), ``positions 2, 4 and 7``."""
    ps = sorted(ps)
    if len(ps) == 1:
        return f"position {ps[0]}"
    if ps == list(range(ps[0], ps[-1] + 1)):
        return f"positions {ps[0]}\u2013{ps[-1]}"
    return "positions " + ", ".join(str(p) for p in ps[:-1]) + f" and {ps[-1]}"


def _pct_ci(words: Words, path: str, est: HasCI) -> Any:
    """``71% (95% CI 64%-100%)``, the value tagged; without the CI when it has none."""
    text = pct(est.value)
    if math.isfinite(est.ci.low) and math.isfinite(est.ci.high):
        text += f" (95%{NBSP}CI {pct(est.ci.low)}\u2013{pct(est.ci.high)})"
    return words.num(f"{path}/value", est.value, text)


def _p_text(p: float) -> str:
    """``p < 0.001`` or ``p = 0.031`` (non-breaking spaces: never split over lines)."""
    shown = fmt_p(p).replace(" ", NBSP)
    return f"p{NBSP}{shown}" if shown.startswith("<") else f"p{NBSP}={NBSP}{shown}"


def permuted_configurations(groups: Sequence[Configuration]) -> list[int]:
    """Indices (in ``groups``) outside the identity-order conditions (``decoding``,
    ``labels``: a position there is a retrieval rank); all of them when there is no
    other."""
    return [i for i, g in enumerate(groups) if g.condition not in IDENTITY_ORDER] or list(
        range(len(groups)))


def headline_configuration(groups: Sequence[Configuration]) -> int:
    """Index (in ``groups``) of the configuration the verdict leads with: the largest
    PB among :func:`permuted_configurations`."""
    return max(permuted_configurations(groups), key=lambda i: groups[i].pb.value
               if math.isfinite(groups[i].pb.value) else -1.0)


def _subject(groups: Sequence[Configuration], i: int) -> str:
    """Who did it: ``The model smollm2`` alone, else the configuration named."""
    g = groups[i]
    if len(groups) == 1:
        return "The model" if g.model == "(all)" else f"The model {g.model}"
    return f"Where position mattered most ({g.label}), the model"


def position_sentence(words: Words, groups: Sequence[Configuration], i: int) -> Any:
    """What configuration ``i`` did by prompt position, against chance (``""`` when its
    position shares are undefined)."""
    g, k = groups[i], groups[i].k
    q = [est.value for est in g.position_distribution]
    if len(q) != k or not all(math.isfinite(x) for x in q):
        return words.fill("")

    def share(p: int) -> Any:
        return words.num(f"groups/{i}/position_distribution/{p - 1}/value", q[p - 1],
                         pct(q[p - 1]))

    by_share = sorted(range(1, k + 1), key=lambda p: (-q[p - 1], p))
    named = [p for p in by_share if q[p - 1] > 1 / k][:MAX_NAMED] or by_share[:1]
    picks = [words.fill("the candidate shown {} in {} of its answers",
                        ordinal(named[0], k), share(named[0]))]
    picks += [words.fill("the one shown {} in {}", ordinal(p, k), share(p)) for p in named[1:]]
    listed = picks[0] if len(picks) == 1 else words.join(
        [words.join(_between(words, picks[:-1], ", ")), words.fill(" and "), picks[-1]])
    rest = _the_rest(words, [p for p in range(1, k + 1) if p not in named], q, share)
    return words.fill("{} picked {}{}. With no preference for a position, each of the {} "
                      "would get {}. ", _subject(groups, i), listed, rest, k, pct(1 / k))


def _between(words: Words, parts: Sequence[Any], sep: str) -> list[Any]:
    out: list[Any] = []
    for j, part in enumerate(parts):
        out += [words.fill(sep), part] if j else [part]
    return out


def _the_rest(words: Words, others: Sequence[int], q: Sequence[float],
              share: Callable[[int], Any]) -> Any:
    """``; it never picked positions 2-4`` / ``; each of the other positions got
    16%-17%`` for the positions not named one by one."""
    never = [p for p in others if q[p - 1] == 0]
    some = [p for p in others if q[p - 1] > 0]
    parts = []
    if some:
        who = "each of the other positions" if not never else _positions(some)
        if len(some) == 1:
            parts.append(words.fill("{} got {}", _positions(some), share(some[0])))
        else:
            lo = min(some, key=lambda p: q[p - 1])
            hi = max(some, key=lambda p: q[p - 1])
            got = share(lo) if pct(q[lo - 1]) == pct(q[hi - 1]) else words.join(
                [share(lo), words.fill("\u2013"), share(hi)])
            parts.append(words.fill("{} got {}", who, got))
    if never:
        parts.append(words.fill("it never picked {}", _positions(never)))
    if not parts:
        return words.fill("")
    return words.join([words.fill("; "), *_between(words, parts, " and ")])


def _p_value(g: Configuration, test: str, holm: bool) -> tuple[float, str]:
    """The Holm-adjusted p-value of ``test`` when ``holm`` and there is one, else the
    raw one, with its sidecar key."""
    adjusted = g.unbp_pvalue_holm if test == "pob_unbp" else g.icm_pvalue_holm
    if holm and math.isfinite(adjusted):
        return adjusted, "pvalue_holm"
    return (g.unbp_pvalue if test == "pob_unbp" else g.icm_pvalue), "pvalue"


def chance_sentence(words: Words, g: Configuration, i: int, alpha: float,
                    holm: bool) -> Any:
    """Whether the position pattern is more than chance, the tests named in words and
    their p-values after (Holm-adjusted across configurations when ``holm``)."""
    p_unbp, unbp_key = _p_value(g, "pob_unbp", holm)
    p_icm, icm_key = _p_value(g, "pob_icm", holm)
    blind = g.analysis.pob_icm is not None and g.analysis.pob_icm.caveat is not None
    tests, used = [], []
    if math.isfinite(p_unbp):
        used.append(p_unbp)
        tests.append(words.fill(
            "a test of whether the positions' shares are even ({}) gives {}",
            words.term("POB-UNBP"),
            words.num(f"groups/{i}/pob_unbp/{unbp_key}", p_unbp, _p_text(p_unbp))))
    if blind:
        tests.append(words.fill(
            "the test of whether the candidate picked depends on the order shown ({}) "
            "cannot tell here: no order was shown twice", words.term("POB-ICM")))
    elif math.isfinite(p_icm):
        used.append(p_icm)
        tests.append(words.fill(
            "a test of whether the candidate picked depends on the order shown ({}) "
            "gives {}", words.term("POB-ICM"),
            words.num(f"groups/{i}/pob_icm/{icm_key}", p_icm, _p_text(p_icm))))
    if not tests:
        return words.fill("")
    alpha_text = words.num("alpha", alpha, f"{alpha:g}")
    lead = ("Chance alone would rarely produce this (a p-value at or below {} says so): "
            if any(p <= alpha for p in used)
            else "Chance alone could produce this (no p-value is at or below {}): ")
    adjusted = " (p-values adjusted for testing several configurations: Holm)" if (
        unbp_key == "pvalue_holm" or icm_key == "pvalue_holm") else ""
    return words.join([words.fill(lead, alpha_text), *_between(words, tests, ", and "),
                       words.fill("{}. ", adjusted)])


def how_much_paragraph(words: Words, g: Configuration, i: int) -> Any:
    """How much position decided: the position-driven share and its strong/soft split
    (or why the split is not identified; sPB alone from files without the split), then
    PB and how it relates to both the share and the raw distance of the shares from
    even."""
    share = g.positional_share
    if math.isfinite(share.value):
        parts = [words.fill("position, not the candidates, made {} of the answers (the "
                            "position-driven share). ",
                            _pct_ci(words, f"groups/{i}/positional_share", share)),
                 _split_sentence(words, g, i)]
    elif math.isfinite(g.spb.value):
        parts = [words.fill("position moved {} of the answers to a candidate the model "
                            "does not pick for that query when position plays no part "
                            "(strong bias, sPB). ", _pct_ci(words, f"groups/{i}/spb", g.spb))]
    else:
        parts = []
    pb = _pb_sentence(words, g, i, share_known=math.isfinite(share.value))
    if not parts and not pb:
        return words.fill("")
    return words.join([words.label("How much position decided:"), words.fill(" "), *parts, pb])


#: The plain words, the table cell and `analyze` say what a spread position effect could
#: add to sPB (`upper_if_spread`) when it is at least this much above the CI.
SPREAD_MARGIN = 0.005


def spread_shown(upper: float, ci_high: float) -> bool:
    """Whether sPB's ``upper_if_spread`` is worth saying: at least :data:`SPREAD_MARGIN`
    above the CI's upper end ``ci_high``."""
    return math.isfinite(upper) and math.isfinite(ci_high) and upper - ci_high >= SPREAD_MARGIN


def _split_sentence(words: Words, g: Configuration, i: int) -> Any:
    if g.spb_note is not None:
        return _unidentified_split(words, g, i)
    if not math.isfinite(g.spb.value):
        return words.fill("")
    split = words.fill(
        "Of those, {} of all answers went to a candidate the model does not pick for that "
        "query when position plays no part (strong bias, sPB) and {} to one it does pick "
        "anyway (soft bias). ",
        _pct_ci(words, f"groups/{i}/spb", g.spb),
        _pct_ci(words, f"groups/{i}/spb_soft", g.spb_soft))
    upper = g.spb_upper_if_spread
    if not spread_shown(upper, g.spb.ci.high):
        return split
    return words.join([split, words.fill(
        "Some answers at the other positions land at random, as decoding noise does; if "
        "they were a position effect spread over several positions, which the data cannot "
        "tell apart, sPB could be as large as {}. ",
        words.num(f"groups/{i}/spb_upper_if_spread", upper, f"{100 * upper:.1f}%"))])


def _unidentified_split(words: Words, g: Configuration, i: int) -> Any:
    """Why the strong/soft split is not identified, and the bound on sPB: the upper end
    of its interval, or without one (too few queries) the position-driven share times
    (1 - 1/k), a point value that is said to be one."""
    head = words.fill(
        "Whether those answers went to candidates the model would not otherwise pick for "
        "the query (strong bias, sPB) or to ones it might have picked anyway (soft bias) "
        "is not identified here: {}. ", unidentified_reason(g.spb_note or ""))
    high = g.spb.ci.high
    if math.isfinite(high):
        return words.join([head, words.fill(
            "So sPB is only known to lie between 0 and {}. ",
            words.num(f"groups/{i}/spb/ci_high", high, fmt(high)))])
    point = g.positional_share.value * (1.0 - 1.0 / g.k)
    if not math.isfinite(point):
        return head
    return words.join([head, words.fill(
        "So sPB is at most the position-driven share times (1 - 1/k), {} here: a point "
        "value, since {} queries are too few for an interval. ",
        f"{100 * point:.0f}%", str(g.n_queries))])


def unidentified_reason(note: str) -> str:
    """The reason of ``analyze``'s note on an unidentified split, without the note's
    ``not identified:`` head and its consequence (the bounds, given separately).

    >>> unidentified_reason("not identified: 0 of 30 queries have two or more selections "
    ...                     "at the unfavoured positions, so the split is only bounded")
    '0 of 30 queries have two or more selections at the unfavoured positions'
    """
    reason = note.removeprefix("not identified: ").split(", so ", 1)[0].strip()
    return reason or note


def _pb_sentence(words: Words, g: Configuration, i: int, *, share_known: bool) -> Any:
    """PB, then how it relates to the position-driven share and to the plug-in TV (the
    raw distance of the observed shares from even)."""
    if not math.isfinite(g.pb.value):
        return words.fill("")
    parts = [words.fill("PB" + NBSP + "=" + NBSP + "{} counts the answers position moved "
                        "away from an even spread over the positions (0" + NBSP + "=" + NBSP
                        + "none, 1" + NBSP + "=" + NBSP + "all). ",
                        words.num(f"groups/{i}/pb/value", g.pb.value, fmt_ci(g.pb)))]
    if share_known and g.pb.value < g.positional_share.value - _SAME:
        parts.append(words.fill("It is below the position-driven share because some answers "
                                "position made land where an even spread puts them anyway. "))
    plugin = g.pb_plugin
    if math.isfinite(plugin):
        raw = words.num(f"groups/{i}/pb/plugin", plugin, fmt(plugin))
        if g.pb.value < plugin - _SAME:
            parts.append(words.fill(
                "The raw distance of the shares from even is larger, {}, because small "
                "samples make shares look uneven; PB removes that by cross-fitting (the "
                "favoured positions are found on some queries and measured on the "
                "others). ", raw))
        elif g.pb.value < plugin + _SAME:
            parts.append(words.fill(
                "The raw distance of the shares from even is the same, {}: here sampling "
                "noise does not inflate it (PB is cross-fitted: the favoured positions are "
                "found on some queries and measured on the others). ", raw))
        else:
            parts.append(words.fill(
                "The raw distance of the shares from even is {} (PB is cross-fitted: the "
                "favoured positions are found on some queries and measured on the "
                "others). ", raw))
    return words.join(parts)


def plain_summary(rows: Sequence[Mapping[str, Any]], *, tests: bool = True) -> str:
    """The verdict's plain words for the terminal, from ``analyze``'s JSON rows.

    Parameters
    ----------
    rows : sequence of mapping
        :meth:`GroupedAnalysis.to_list <recaudit.positional.GroupedAnalysis.to_list>`
        (or one :meth:`PositionalAnalysis.to_dict
        <recaudit.positional.PositionalAnalysis.to_dict>`): what
        ``recaudit positional analyze --json`` prints.
    tests : bool
        Say whether the pattern is more than chance (the fixed-sample tests); False
        after a sequential run, whose verdict is its sequential decision.

    Returns
    -------
    str
        Two paragraphs separated by a blank line: what the model did by prompt
        position (the configuration with the largest PB) and how much position decided.
    """
    groups = configurations(GroupedAnalysis.from_list(list(rows)))
    if not groups:
        return ""
    words, i = TextWords(), headline_configuration(groups)
    g = groups[i]
    lead = [position_sentence(words, groups, i)]
    if tests:
        lead.append(chance_sentence(words, g, i, g.analysis.alpha, holm=len(groups) > 1))
    paragraphs = [words.join(lead), how_much_paragraph(words, g, i)]
    return "\n\n".join(p.strip() for p in paragraphs if p.strip())


def comparison_verdict(rows: Sequence[Mapping[str, Any]], alpha: float = 0.05) -> str:
    """Which system is less position-biased, in words, from comparison rows
    (``positional compare --json``, a run's ``compare.json``): each pair whose PB
    difference is significant after the family's adjustment, with the difference's
    adjusted interval (its level says the confidence), else that none differs."""
    pb = [r for r in rows if r.get("measure") == "pb_plugin"]
    found = [r for r in pb if math.isfinite(r["pvalue_adjusted"])
             and r["pvalue_adjusted"] <= alpha]
    if not found:
        return ("No pair differs clearly in positional bias (PB): every adjusted p-value "
                f"is above {alpha:g}; the audit cannot say which system is less biased.")
    parts = []
    for r in found:
        less, more = (r["b"], r["a"]) if r["difference"] > 0 else (r["a"], r["b"])
        low, high = r.get("ci_low_adjusted", math.nan), r.get("ci_high_adjusted", math.nan)
        level = r.get("adjusted_level", math.nan)
        if not (math.isfinite(low) and math.isfinite(high) and math.isfinite(level)):
            low, high, level = r["ci_low"], r["ci_high"], r["confidence_level"]
        cell = ", ".join(f"{k} = {r[k]:g}" if isinstance(r[k], float) else f"{k} = {r[k]}"
                         for k in ("k", "temperature", "condition") if k in r)
        where = f" ({cell})" if cell else ""
        parts.append(f"{less} is less position-biased than {more}{where}: PB lower by "
                     f"{abs(r['difference']):.3f}, {level:.1%} CI of {r['a']} - {r['b']} "
                     f"{low:+.3f} to {high:+.3f} ({r.get('adjust', 'holm')}-adjusted p = "
                     f"{r['pvalue_adjusted']:.3g})")
    return "; ".join(parts) + "."
