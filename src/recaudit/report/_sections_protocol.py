"""The evaluation protocol on the fairness page: the verdict's clause, the warnings and
the table of a study run under several protocols.

A protocol is ``"full"`` (every item the user has not interacted with in training is a
candidate) or sampled ranking ``"uniN"`` / ``"popN"`` (RecBole's names: each test item
ranked against ``N`` negatives drawn uniformly or by popularity). Sampled metrics are
known to reorder models (Krichene & Rendle, KDD 2020), so the page says which protocol
made the figures and, when sampled, shows the evaluation's warnings beside the verdict.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from markupsafe import Markup

from ..fairness import FairnessEvaluation
from ._load_fairness import FULL, FairnessRun
from ._page import NAN_ESTIMATE, Cell, Section, Table, ci_cell, num, p_cell

__all__ = [
    "SAMPLED_WARNING",
    "protocol_clause",
    "protocol_data",
    "protocol_phrase",
    "protocol_warnings",
    "protocols_section",
]

_SAMPLED = re.compile(r"^(uni|pop)(\d+)$")
_DRAWN = {"uni": "drawn uniformly", "pop": "drawn in proportion to their popularity"}
#: Shown for a sampled protocol whose JSON carries no warning of its own.
SAMPLED_WARNING = (
    "Sampled metrics: these figures rank each test item against a sample of negatives, "
    "not the whole catalog. Sampled metrics can reorder models (Krichene & Rendle, KDD "
    "2020) and may move group gaps (RD, NRD, IB): do not compare them with full-ranking "
    "figures or with a paper's numbers made under another protocol."
)


def protocol_phrase(protocol: str, n_items: int) -> str:
    """``"full ranking over 1,682 items"`` or ``"sampled ranking: uni100 -- each test item
    ranked against 100 sampled negatives (drawn uniformly)"``."""
    if protocol == FULL:
        return f"full ranking over {n_items:,} items"
    found = _SAMPLED.match(protocol)
    if found is None:
        return f"protocol {protocol}"
    kind, size = found.groups()
    return (
        f"sampled ranking: {protocol} \u2014 each test item ranked against {int(size):,} "
        f"sampled negatives ({_DRAWN[kind]})"
    )


def _models_by_protocol(run: FairnessRun) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for i, name in enumerate(run.evaluations):
        out.setdefault(run.protocols.get(name, FULL), []).append(i)
    return out


def protocol_clause(run: FairnessRun) -> Markup:
    """How the figures were made, for the verdict's first sentence (no leading space)."""
    names = list(run.evaluations)
    evaluations = list(run.evaluations.values())

    def phrase(protocol: str, i: int) -> Markup:
        text = protocol_phrase(protocol, evaluations[i].n_items)
        if protocol != FULL:
            return Markup("{}").format(text)
        n = evaluations[i].n_items
        return Markup("full ranking over {} items").format(
            num(f"models/{i}/n_items", n, f"{n:,}")
        )

    groups = _models_by_protocol(run)
    if len(groups) == 1:
        protocol, members = next(iter(groups.items()))
        clause = Markup("evaluated by {}").format(phrase(protocol, members[0]))
    else:
        clause = Markup("evaluated under different protocols, not comparable: {}").format(
            Markup("; ").join(
                Markup("{} for {}").format(phrase(p, m[0]), ", ".join(names[i] for i in m))
                for p, m in groups.items()
            )
        )
    if run.by_protocol:
        others = list(dict.fromkeys(
            p for by in run.by_protocol.values() for p in by if p not in groups
        ))
        if others:
            clause += Markup(" (also under {}: see Evaluation protocols)").format(
                ", ".join(others)
            )
    return clause


def protocol_warnings(run: FairnessRun) -> tuple[str, ...]:
    """The evaluations' warnings, once each; :data:`SAMPLED_WARNING` when a sampled
    protocol was used and no JSON carries a warning."""
    found = list(dict.fromkeys(w for ws in run.warnings.values() for w in ws))
    used = {*run.protocols.values(), *(p for by in run.by_protocol.values() for p in by)}
    if not found and used - {FULL}:
        found.append(SAMPLED_WARNING)
    return tuple(found)


def _protocol_row(
    i: int, model: str, protocol: str, j: int, ev: FairnessEvaluation, key: str, rank: int
) -> tuple[Cell, ...]:
    path = f"models/{i}/protocols/{j}"
    ib = ev.inter_bias.get(key)
    return (
        Cell(model),
        Cell(protocol),
        ci_cell(f"{path}/overall/{key}", ev.overall.get(key, NAN_ESTIMATE)),
        Cell(str(rank), f"{path}/rank", rank) if rank else Cell("n/a"),
        ci_cell(f"{path}/rd/{key}", ib.rd if ib else NAN_ESTIMATE),
        p_cell(f"{path}/rd/{key}", ib.pvalue, ib.pvalue_holm) if ib else Cell("n/a"),
        ci_cell(f"{path}/ib/{key}", ib.ib if ib else NAN_ESTIMATE),
    )


def _ranks(run: FairnessRun, key: str) -> dict[tuple[str, str], int]:
    """Rank (1 = best) of each model by overall ``key`` within each protocol."""
    out = {}
    protocols = dict.fromkeys(p for by in run.by_protocol.values() for p in by)
    for protocol in protocols:
        scored = [
            (-by[protocol].overall[key].value, model)
            for model, by in run.by_protocol.items()
            if protocol in by and key in by[protocol].overall
        ]
        for r, (_, model) in enumerate(sorted(scored), start=1):
            out[model, protocol] = r
    return out


def protocols_section(run: FairnessRun, metric: str, n: int) -> Section | None:
    """``metric@n``, its RD and IB per model and protocol (a study with several)."""
    if not run.by_protocol:
        return None
    key = f"{metric}@{n}"
    ranks = _ranks(run, key)
    rows = tuple(
        _protocol_row(i, model, protocol, j, ev, key, ranks.get((model, protocol), 0))
        for i, model in enumerate(run.evaluations)
        for j, (protocol, ev) in enumerate(run.by_protocol.get(model, {}).items())
    )
    return Section(
        "protocols",
        "Evaluation protocols",
        notes=(
            "The same trained models scored under each protocol of the study: full ranking "
            "against the whole catalog, and sampled ranking against a few sampled "
            "negatives per test item. Compare the rows of one model to see how accuracy, "
            "its rank among the models, the group gap RD and IB move with the protocol.",
        ),
        tables=(Table(
            "tab-protocols",
            f"{metric}@{n} (rank among the models under the same protocol), RD-{metric}@{n} "
            f"with the p-value of the permutation test, and IB-{metric}@{n}, per model and "
            "protocol, with 95% CIs.",
            ("model", "protocol", f"{key} [95% CI]", "rank", f"RD@{n} [95% CI]", f"p@{n}",
             f"IB@{n} [95% CI]"),
            rows,
        ),),
    )


def protocol_data(run: FairnessRun, name: str, key: str) -> dict[str, Any]:
    """The sidecar's protocol part of model ``name`` (``protocols``: a list, rows of the
    protocol table, every metric and N)."""
    ranks = _ranks(run, key)

    def keyed(d: Mapping[str, Any]) -> dict[str, Any]:
        return {k: est.to_dict() for k, est in d.items()}

    return {
        "protocol": run.protocols.get(name, FULL),
        "warnings": list(run.warnings.get(name, ())),
        "protocols": [
            {
                "name": protocol,
                "rank": ranks.get((name, protocol), 0),
                "overall": keyed(ev.overall),
                "rd": {k: {**ib.rd.to_dict(), "pvalue": ib.pvalue, "pvalue_holm": ib.pvalue_holm}
                       for k, ib in ev.inter_bias.items()},
                "ib": {k: ib.ib.to_dict() for k, ib in ev.inter_bias.items()},
            }
            for protocol, ev in run.by_protocol.get(name, {}).items()
        ],
    }
