"""A joint audit in plain words, for the terminal (the positional verdict's own words
come from the report's :func:`~recaudit.report.plain_summary`)."""

from __future__ import annotations

import math

from .._stats import Estimate
from ..fairness import FairnessEvaluation
from ..positional import ClassPositionLift
from ._results import JointAudit

__all__ = ["joint_summary"]


def _num(x: float) -> str:
    return "n/a" if x is None or math.isnan(x) else f"{x:.3g}"


def _ci(e: Estimate) -> str:
    return f"{_num(e.value)} [{_num(e.ci.low)}, {_num(e.ci.high)}]"


def _excludes_zero(e: Estimate) -> bool:
    return e.ci.low > 0 or e.ci.high < 0


def _groups_sentence(name: str, ev: FairnessEvaluation) -> str:
    hits = ", ".join(f"{g.name}{' (protected)' if g.protected else ''} "
                     f"{g.metrics['hit@1'].value:.1%} of {g.n_users} users"
                     for g in ev.groups.values())
    gap = ev.inter_bias["hit@1"]
    if math.isnan(gap.rd.value):
        verdict = f"the gap is not defined ({gap.undefined_reason})"
    elif _excludes_zero(gap.rd):
        side = "worse" if gap.rd.value > 0 else "better"
        verdict = (f"the protected group is served {side}: RD {_ci(gap.rd)}, "
                   f"permutation p {_num(gap.pvalue)}")
    else:
        verdict = (f"the data cannot tell the groups apart: RD {_ci(gap.rd)}, "
                   f"permutation p {_num(gap.pvalue)}")
    return f"{name}: the held-out movie was hit for {hits}; {verdict}."


def _popularity_sentence(llm: FairnessEvaluation, retriever: FairnessEvaluation) -> str:
    if llm.popularity_bias is None or retriever.popularity_bias is None:
        return f"Popularity: not computed ({llm.popularity_bias_reason})."
    a, b = llm.popularity_bias.overall, retriever.popularity_bias.overall
    return (f"Popularity: the LLM's picks were liked by {_ci(a['arp@1'])} training users on "
            f"average (ARP@1) against {_ci(b['arp@1'])} for the retriever's top-1; "
            f"long-tail share (APLT@1) {_ci(a['aplt@1'])} against {_ci(b['aplt@1'])}.")


def _lift_sentence(lift: ClassPositionLift) -> str:
    head, tail = lift.contrast
    parts = [f"{g} {_ci(lift.lift[g])} ({lift.showings_at[g]} showings at position "
             f"{lift.position})" for g in (head, tail)]
    d = lift.difference
    verdict = ("position acts differently on long-tail movies than on popular ones"
               if _excludes_zero(d) else
               "no evidence that position acts differently on long-tail movies")
    return (f"Position-{lift.position} lift (choice rate shown there minus elsewhere): "
            f"{'; '.join(parts)}; {tail} - {head} {_ci(d)}, p {_num(lift.pvalue)}: "
            f"{verdict}.")


def joint_summary(result: JointAudit) -> list[str]:
    """The group, popularity and interaction findings, one sentence each, with the
    numbers and CIs behind them."""
    lines = [_groups_sentence("The LLM", result.llm),
             _groups_sentence("The retriever's top-1", result.retriever),
             _popularity_sentence(result.llm, result.retriever)]
    if result.lift is None:
        lines.append(f"Position lift by popularity: not estimable ({result.lift_reason}).")
    else:
        lines.append(_lift_sentence(result.lift))
    return lines
