"""The fairness report's popularity-bias sections, from each evaluation's
``popularity_bias`` (``fairness evaluate --train``; :class:`~recaudit.fairness.PopularityBias`).

- :func:`popularity_bias_section`: the head/tail plot (APLT@N per user group beside the
  tail share of the same users' test items) and the PopRSP/PopREO summary table; a
  model whose section is ``null`` shows its ``popularity_bias_reason`` instead;
- :func:`popularity_groups_section`: users grouped by the popularity of their training
  items (niche / diverse / blockbuster), the mean popularity of their profiles beside
  ARP@N (Abdollahpouri et al. 2021, "User-centered evaluation of popularity bias in
  recommender systems", UMAP).

Both are drawn at the headline N when the section has it. Numbers point into the
sidecar's ``models/<i>/popularity_bias`` (:func:`popularity_data`): groups are lists,
so a group's name never appears in a path.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._stats import Estimate
from ..fairness import FairnessEvaluation, PopularityBias
from . import _plots_popularity as plots
from ._load_fairness import FairnessRun
from ._page import NAN_ESTIMATE, Cell, Fig, Section, Table, ci_cell

__all__ = ["popularity_bias_section", "popularity_data", "popularity_groups_section"]

ALL_USERS = "all users"
NOT_COMPUTED = "{model}: popularity bias not computed ({reason})."
NO_REASON = "the evaluation gives no reason"
NO_SECTION = (
    "The results have no popularity-bias figures (written without `--train`, or by a "
    "recaudit older than them): rerun `recaudit fairness evaluate --train ...` for the "
    "head/tail and popularity-group plots."
)
NO_GROUPS = (
    "{models}: the evaluation has no user popularity groups (written before them, or fewer "
    "than 3 training users); rerun `recaudit fairness evaluate --train ...`."
)


def _computed(run: FairnessRun) -> dict[int, tuple[str, PopularityBias]]:
    """Index of the model -> (name, its popularity bias), for the models that have one."""
    return {
        i: (name, ev.popularity_bias)
        for i, (name, ev) in enumerate(run.evaluations.items())
        if ev.popularity_bias is not None
    }


def _cut(computed: Mapping[int, tuple[str, PopularityBias]], main_n: int) -> int:
    """The headline N when every section has APLT at it, else the smallest common N."""
    common = set.intersection(*(
        {int(k.split("@")[1]) for k in bias.overall if k.startswith("aplt@")}
        for _, bias in computed.values()
    ))
    return main_n if main_n in common or not common else min(common)


def _reasons(run: FairnessRun) -> tuple[str, ...]:
    return tuple(
        NOT_COMPUTED.format(model=name, reason=ev.popularity_bias_reason or NO_REASON)
        for name, ev in run.evaluations.items()
        if ev.popularity_bias is None
    )


def _est(table: Mapping[str, Estimate], key: str) -> Estimate:
    return table.get(key, NAN_ESTIMATE)


# ------------------------------------------------------------------ head and tail
def _head_tail_pairs(bias: PopularityBias, n: int) -> list[plots.Pair]:
    key = f"aplt@{n}"
    pairs = [plots.Pair(ALL_USERS, _est(bias.profile_overall, "test_tail_share"),
                        _est(bias.overall, key))]
    for g, table in bias.groups.items():
        own = _est(bias.profile_groups.get(g, {}), "test_tail_share")
        pairs.append(plots.Pair(g, own, _est(table, key)))
    return pairs


def _summary_rows(i: int, name: str, bias: PopularityBias, n: int) -> list[tuple[Cell, ...]]:
    base = f"models/{i}/popularity_bias"
    rows = []
    sets = [(ALL_USERS, f"{base}/overall", bias.overall, f"{base}/profile", bias.profile_overall)]
    sets += [
        (g, f"{base}/groups/{j}/metrics", table, f"{base}/groups/{j}/profile",
         bias.profile_groups.get(g, {}))
        for j, (g, table) in enumerate(bias.groups.items())
    ]
    for label, path, table, own_path, own in sets:
        rows.append((
            Cell(name),
            Cell(label),
            ci_cell(f"{path}/aplt@{n}", _est(table, f"aplt@{n}")),
            ci_cell(f"{own_path}/test_tail_share", _est(own, "test_tail_share")),
            *(ci_cell(f"{path}/{m}@{n}", _est(table, f"{m}@{n}"))
              for m in ("arp", "novelty", "poprsp", "popreo")),
        ))
    return rows


def popularity_bias_section(run: FairnessRun, main_n: int) -> Section | None:
    """APLT per user group beside the test set's tail share, and PopRSP/PopREO (a note
    only when no evaluation has the figures: the reasons, or :data:`NO_SECTION`)."""
    computed = _computed(run)
    reasons = _reasons(run)
    if not computed:
        if all(ev.popularity_bias_reason is None for ev in run.evaluations.values()):
            reasons = (NO_SECTION,)
        return Section("popularity-bias", "Popularity bias: head and tail", notes=reasons)
    n = _cut(computed, main_n)
    head = next(iter(computed.values()))[1].n_head_items
    fig = Fig(
        "fig-head-tail",
        f"Share of the recommendations from the long tail (APLT@{n})",
        f"Per model and user group, the share of each top-{n} list drawn from the long tail "
        f"(every item outside the {head} most popular by training users; APLT@{n}, user "
        "mean), beside the tail share of the same users' test items, with bootstrap 95% "
        "CIs. A recommender without popularity bias recommends the tail about as often as "
        "the users choose it; bars far below their pair show the lists concentrating on "
        "the head, and a group whose gap is larger is served more of the same popular items.",
        plots.head_tail({name: _head_tail_pairs(bias, n) for name, bias in computed.values()},
                        n=n, fig_id="fig-head-tail"),
    )
    rows = tuple(r for i, (name, bias) in computed.items()
                 for r in _summary_rows(i, name, bias, n))
    table = Table(
        "tab-popularity-bias",
        f"Popularity bias at N = {n}, with 95% CIs. PopRSP@{n}: std/mean of the rates at "
        "which head and tail items are recommended (0 = both recommended as often as they "
        f"are available); PopREO@{n}: the same of the rates at which relevant head and tail "
        "items are recommended (0 = equal opportunity). ARP: mean training popularity of "
        "the recommended items; novelty: their mean self-information (bits).",
        ("model", "users", f"APLT@{n} [95% CI]", "test tail share [95% CI]",
         f"ARP@{n} [95% CI]", f"novelty@{n} [95% CI]", f"PopRSP@{n} [95% CI]",
         f"PopREO@{n} [95% CI]"),
        rows,
    )
    return Section("popularity-bias", "Popularity bias: head and tail", notes=reasons,
                   figures=(fig,), tables=(table,))


# -------------------------------------------------------------- popularity groups
def _group_pairs(bias: PopularityBias, n: int) -> list[plots.Pair]:
    return [
        plots.Pair(g, _est(group.profile, "profile_popularity"), _est(group.metrics, f"arp@{n}"))
        for g, group in bias.user_popularity_groups.items()
    ]


def _group_rows(i: int, name: str, bias: PopularityBias, n: int) -> list[tuple[Cell, ...]]:
    base = f"models/{i}/popularity_bias/user_popularity_groups"
    return [
        (
            Cell(name),
            Cell(g),
            Cell(str(group.n_users), f"{base}/{j}/n_users", group.n_users),
            ci_cell(f"{base}/{j}/profile/profile_popularity",
                    _est(group.profile, "profile_popularity")),
            ci_cell(f"{base}/{j}/metrics/arp@{n}", _est(group.metrics, f"arp@{n}")),
            ci_cell(f"{base}/{j}/profile/profile_tail_share",
                    _est(group.profile, "profile_tail_share")),
            ci_cell(f"{base}/{j}/metrics/aplt@{n}", _est(group.metrics, f"aplt@{n}")),
        )
        for j, (g, group) in enumerate(bias.user_popularity_groups.items())
    ]


def popularity_groups_section(run: FairnessRun, main_n: int) -> Section | None:
    """Niche / diverse / blockbuster users: profile popularity beside ARP@N."""
    computed = _computed(run)
    if not computed:
        return None
    grouped = {i: mb for i, mb in computed.items() if mb[1].user_popularity_groups}
    without = [name for i, (name, _) in computed.items() if i not in grouped]
    notes = (NO_GROUPS.format(models=", ".join(without)),) if without else ()
    if not grouped:
        return Section("popularity-groups", "Niche and blockbuster users", notes=notes)
    n = _cut(grouped, main_n)
    fig = Fig(
        "fig-popularity-groups",
        f"Profile popularity against recommended popularity (ARP@{n}) per user group",
        f"Users grouped by popularity: {_grouping_rule(grouped)}. Per model and group, "
        "the mean popularity (training users per item) of the users' own items beside "
        f"that of their top-{n} lists (ARP@{n}), with bootstrap 95% CIs. Where the "
        "recommended bar of the least mainstream users (niche, or q1) rises far above "
        "their profile, the "
        "recommender pushes them towards the mainstream: the users the popularity-bias "
        "literature finds worst served (Abdollahpouri et al. 2021).",
        plots.popularity_groups(
            {name: _group_pairs(bias, n) for name, bias in grouped.values()},
            n=n, fig_id="fig-popularity-groups",
        ),
    )
    rows = tuple(r for i, (name, bias) in grouped.items() for r in _group_rows(i, name, bias, n))
    table = Table(
        "tab-popularity-groups",
        f"Per user popularity group at N = {n}, with 95% CIs: evaluated users, mean "
        f"popularity of their training items and of their lists (ARP@{n}), and the tail "
        f"share of both (profile, APLT@{n}).",
        ("model", "popularity group", "users", "profile popularity [95% CI]",
         f"ARP@{n} [95% CI]", "profile tail share [95% CI]", f"APLT@{n} [95% CI]"),
        rows,
    )
    return Section("popularity-groups", "Niche and blockbuster users", notes=notes,
                   figures=(fig,), tables=(table,))


def _grouping_rule(grouped: Mapping[int, tuple[str, Any]]) -> str:
    """The grouping rule of the models' popularity groups (one sentence per distinct rule)."""
    rules = dict.fromkeys(bias.popularity_grouping.rule for _, bias in grouped.values())
    return "; ".join(rules)


# ------------------------------------------------------------------------ sidecar
def popularity_data(ev: FairnessEvaluation) -> dict[str, Any]:
    """``popularity_bias`` (``None`` when not computed) and ``popularity_bias_reason``
    of one model in the sidecar; groups as lists of ``{"name", ...}``."""
    bias = ev.popularity_bias

    def keyed(d: Mapping[str, Estimate]) -> dict[str, Any]:
        return {key: est.to_dict() for key, est in d.items()}

    if bias is None:
        return {"popularity_bias": None, "popularity_bias_reason": ev.popularity_bias_reason}
    return {
        "popularity_bias": {
            "n_head_items": bias.n_head_items,
            "n_train_users": bias.n_train_users,
            "overall": keyed(bias.overall),
            "profile": keyed(bias.profile_overall),
            "groups": [
                {"name": g, "metrics": keyed(table),
                 "profile": keyed(bias.profile_groups.get(g, {}))}
                for g, table in bias.groups.items()
            ],
            "user_popularity_groups": [
                {"name": g, "n_users": group.n_users, "metrics": keyed(group.metrics),
                 "profile": keyed(group.profile)}
                for g, group in bias.user_popularity_groups.items()
            ],
        },
        "popularity_bias_reason": ev.popularity_bias_reason,
    }
