r"""The popularity-bias metrics inside :func:`~recaudit.fairness.evaluate`.

ARP, APLT, ACLT, PopRSP, PopREO and novelty (:mod:`._metrics`, where the formulas
are) of the evaluated users' lists, overall and per group, with the same user-level
stratified bootstrap as the top-N metrics:

- :mod:`._source`: the training side, coded once by the input validation
  (popularity = distinct training users per item, the head, each evaluated user's
  head/tail counts in train and test), or the reason why the metrics are not computed
  (no ``train``, a ``train`` without ``user_id``, an empty ``train``);
- :class:`_PopularityValues`: the per-user user-mean columns and the PopRSP/PopREO
  count vectors; :meth:`_PopularityValues.statistics` turns user weights (one row =
  every user once, or a chunk of bootstrap weight rows) into every ``<metric>@<N>``
  at once (user means nan-aware: ARP and novelty are ``nan`` for a user without a
  list and left out of the mean);
- the users' own side, beside what they are recommended: per user the mean popularity
  of their distinct training items and the tail share of their training and test items
  (:data:`PROFILE_FIGURES`, overall and per group), and the users grouped by the
  popularity of their training items (niche / diverse / blockbuster, or quantiles:
  :func:`~recaudit.fairness.user_popularity_groups` over every ``train`` user as the
  options' :class:`~recaudit.fairness.PopularityGrouping` says, the
  ``popularity_group`` attribute's definition) with every metric per such group, the
  plot of Abdollahpouri et al. (2021): profile popularity beside ARP per user group;
- :class:`_PopularityReplicates`: the bootstrap replicates of every set of users
  (recounted per resample, :mod:`._recount`) and their CIs by :data:`CI_RULE`;
- :meth:`_PopularityValues.per_user_columns`: the per-user values themselves, the
  popularity columns of ``FairnessEvaluation.per_user``;
- :class:`PopularityBias`: the result, with ``to_dict``/``from_dict``
  (:class:`UserPopularityGroup`: one popularity group's figures).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from ..._records import find_key, need_key
from ..._stats import CI_RULES, RULE_METHOD, UNBOUNDED, Estimate
from ...exceptions import InputError
from .. import _from_json as js
from .._metrics import TopNLists
from ._metrics import (
    POPULARITY_METRICS,
    USER_MEAN_METRICS,
    _parity_of_sums,
    popularity_kernel,
)
from ._recount import _Recount
from ._regroup import _Regroup
from ._source import _PopularitySource
from ._user_groups import DEFAULT_GROUPING, PopularityGrouping, parse_popularity_groups

__all__ = ["PROFILE_FIGURES", "PopularityBias", "UserPopularityGroup"]

HEAD_RULE = (
    "ceil(20 %) most popular catalog items by distinct training users "
    "(ties to the smaller item_id); tail = every other catalog item"
)
SECTION_WHERE = "popularity_bias"
#: The users' own side, user means: mean popularity of the distinct training items,
#: tail share of the distinct training items, tail share of the distinct test items.
PROFILE_FIGURES = ("profile_popularity", "profile_tail_share", "test_tail_share")
#: The column of ``FairnessEvaluation.per_user`` holding each user's popularity group.
GROUP_LABEL_COLUMN = "popularity_group"


@dataclass(frozen=True)
class _PopularityValues:
    """Per-user columns of one set of users (internal).

    ``means``: ``(users, len(USER_MEAN_METRICS) * n_cuts)``, metric-major; ``rsp`` and
    ``reo``: the stacked count vectors of :meth:`PopularityCounts.stacked`; ``profile``:
    ``(users, len(PROFILE_FIGURES))``; ``pop_group``: the popularity-group codes
    (:func:`_popularity_group_codes`); ``recount``: the rows of every evaluated user that
    recount popularity in each bootstrap resample (:mod:`._recount`); a subset
    shares them and passes its users' positions to :meth:`_Recount.statistics`.
    """

    means: npt.NDArray[np.float64]
    rsp: npt.NDArray[np.float64]
    reo: npt.NDArray[np.float64]
    ns: tuple[int, ...]
    profile: npt.NDArray[np.float64]
    pop_group: npt.NDArray[np.intp] | None
    recount: _Recount

    @classmethod
    def of(
        cls, source: _PopularitySource, lists: TopNLists, ns: tuple[int, ...]
    ) -> _PopularityValues:
        """The values of every evaluated user (:func:`popularity_kernel`)."""
        per_user, counts = popularity_kernel(
            lists.items, lists.hits, popularity=source.popularity, is_head=source.is_head,
            n_items=source.n_items, n_train_users=source.n_train_users,
            train_head=source.train_head, train_tail=source.train_tail,
            test_head=source.test_head, test_tail=source.test_tail, n=ns,
        )
        rsp, reo = counts.stacked()
        means = np.hstack([per_user[m] for m in USER_MEAN_METRICS])
        recount = _Recount.of(lists.items, lists.hits, ns, source.train_items,
                              source.test_items, source.recount)
        return cls(means, rsp, reo, ns, source.profile, source.popularity_group, recount)

    @property
    def keys(self) -> list[str]:
        """``<metric>@<N>`` of :meth:`statistics`' columns (metric-major)."""
        return [f"{m}@{c}" for m in POPULARITY_METRICS for c in self.ns]

    def subset(self, idx: npt.NDArray[np.intp]) -> _PopularityValues:
        """The rows of the users ``idx``."""
        group = None if self.pop_group is None else self.pop_group[idx]
        return _PopularityValues(self.means[idx], self.rsp[idx], self.reo[idx], self.ns,
                                 self.profile[idx], group, self.recount)

    def statistics(self, weights: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        """Every metric under user weights ``(b, users)``: ``(b, len(keys))``.

        User means are weighted means over the users with a defined value (``nan``
        when none); PopRSP/PopREO are std/mean of the weighted ratios of sums.
        """
        n_cuts = len(self.ns)
        means = _weighted_means(weights, self.means)
        by_name = {
            m: means[:, j * n_cuts : (j + 1) * n_cuts] for j, m in enumerate(USER_MEAN_METRICS)
        }
        by_name["poprsp"] = _parity_of_sums(weights @ self.rsp, n_cuts)
        by_name["popreo"] = _parity_of_sums(weights @ self.reo, n_cuts)
        return np.hstack([by_name[m] for m in POPULARITY_METRICS])

    def profile_statistics(self, weights: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        """:data:`PROFILE_FIGURES` under user weights ``(b, users)``: ``(b, 3)``."""
        return _weighted_means(weights, self.profile)

    def point(self) -> npt.NDArray[np.float64]:
        """:meth:`statistics` with every user once: ``(len(keys),)``."""
        return self.statistics(np.ones((1, self.means.shape[0])))[0]

    def profile_point(self) -> npt.NDArray[np.float64]:
        """:meth:`profile_statistics` with every user once."""
        return self.profile_statistics(np.ones((1, self.profile.shape[0])))[0]

    def per_user_columns(self, labels: tuple[str, ...]) -> dict[str, npt.ArrayLike]:
        """Each user's ``<metric>@<N>`` of the user-mean metrics, :data:`PROFILE_FIGURES`
        and popularity group (``labels[code]``, ``None`` outside the groups): their
        means (over the users with a value) are :meth:`point`'s and :meth:`profile_point`'s.
        """
        keys = [f"{m}@{c}" for m in USER_MEAN_METRICS for c in self.ns]
        out: dict[str, npt.ArrayLike] = {key: self.means[:, k] for k, key in enumerate(keys)}
        out |= {f: self.profile[:, k] for k, f in enumerate(PROFILE_FIGURES)}
        codes = (np.full(self.means.shape[0], -1) if self.pop_group is None
                 else self.pop_group)
        out[GROUP_LABEL_COLUMN] = np.array(
            [labels[c] if c >= 0 else None for c in codes.tolist()], dtype=object)
        return out


def _weighted_means(
    weights: npt.NDArray[np.float64], values: npt.NDArray[np.float64]
) -> npt.NDArray[np.float64]:
    """Column means of ``values`` under ``weights``, over the finite entries (nan if none)."""
    finite = np.isfinite(values)
    with np.errstate(divide="ignore", invalid="ignore"):
        out: npt.NDArray[np.float64] = (weights @ np.where(finite, values, 0.0)) / (
            weights @ finite
        )
    return out


class RuleEstimate(Protocol):
    """``estimate(value, centre, rule, name, *index, support=...)``: an :class:`Estimate`
    of ``value`` with the ``rule`` interval (:func:`~recaudit._stats.bootstrap_interval`)
    of the replicates ``name[:, *index]`` around ``centre``, the estimate on the
    replicates' scale, within the figure's range ``support`` (``_Replicates.rule_estimate``)."""

    def __call__(self, value: float, centre: float, rule: str, name: str,
                 *index: int, support: tuple[float, float] = UNBOUNDED) -> Estimate: ...


#: The profile figures of a popularity group whose replicates re-cut the group per
#: resample (the training profile the groups are cut on; the test tail share, like the
#: lists' metrics, keeps the observed users: decision 199).
_RECUT = np.array([f != "test_tail_share" for f in PROFILE_FIGURES])


#: The bootstrap interval of each figure (:func:`~recaudit._stats.bootstrap_interval`;
#: ``ci_rule`` of the JSON). The head-based figures and novelty are basic intervals: their
#: replicates re-choose the head (and recount novelty) on the resample and so repeat the
#: head-selection bias, which the basic interval takes off; PopRSP and PopREO are
#: ``|d|`` of a signed ``d``, whose basic interval on atanh is folded to ``|d|``; ARP and
#: the profile popularity keep the percentile interval (docs/decisions/0195).
CI_RULE: Mapping[str, str] = MappingProxyType({
    "arp": "percentile", "aplt": "basic", "aclt": "basic", "poprsp": "basic-atanh-folded",
    "popreo": "basic-atanh-folded", "novelty": "basic", "profile_popularity": "percentile",
    "profile_tail_share": "basic", "test_tail_share": "basic",
})
#: The rule of every figure in a JSON written before ``ci_rule``.
OLDER_CI_RULE: Mapping[str, str] = MappingProxyType(dict.fromkeys(CI_RULE, "percentile"))
CI_RULE_MSG = "{where}: unknown figure {figure!r} or rule {rule!r} (rules: {rules})"


#: Where a figure's replicates are: ``(name, index, offset)``, figure ``k`` at
#: ``name[:, *index, offset + k]``.
_Where = tuple[str, tuple[int, ...], int]


def _rule_of(key: str) -> str:
    """The :data:`CI_RULE` of ``<metric>@<N>`` or of a profile figure."""
    return CI_RULE[key.split("@")[0]]


#: The figures bounded by a range their basic interval is clipped to (ACLT@N: ``[0, N]``).
_SHARES = ("aplt", "profile_tail_share", "test_tail_share")


def _support_of(key: str) -> tuple[float, float]:
    """The range of ``<metric>@<N>`` or of a profile figure: shares in ``[0, 1]``, ACLT@N
    in ``[0, N]``, novelty (self-information of items no more popular than the users
    counted) ``>= 0``; the others unbounded (percentile and folded intervals stay in
    range by construction)."""
    name, _, cut = key.partition("@")
    if name in _SHARES:
        return (0.0, 1.0)
    if name == "aclt":
        return (0.0, float(cut))
    if name == "novelty":
        return (0.0, np.inf)
    return UNBOUNDED


@dataclass(frozen=True)
class _PopularityReplicates:
    """The per-group values behind the bootstrap replicates (internal).

    ``groups``/``members``: the attribute groups (by code); ``pop_groups``/``pop_members``:
    the popularity groups, named ``labels`` (empty without them), and ``regroup``, which
    re-cuts them in each resample (``None`` without them).
    """

    everyone: _PopularityValues
    groups: list[_PopularityValues]
    members: list[npt.NDArray[np.intp]]
    labels: tuple[str, ...] = DEFAULT_GROUPING.labels
    pop_groups: list[_PopularityValues] = field(default_factory=list)
    pop_members: list[npt.NDArray[np.intp]] = field(default_factory=list)
    regroup: _Regroup | None = None

    @classmethod
    def of(
        cls, values: _PopularityValues, members: list[npt.NDArray[np.intp]],
        source: _PopularitySource,
    ) -> _PopularityReplicates:
        """The values of every group; ``source.grouping.labels`` name
        ``values.pop_group``'s codes."""
        labels = source.grouping.labels
        pop_members = [] if values.pop_group is None else [
            np.flatnonzero(values.pop_group == j) for j in range(len(labels))
        ]
        return cls(values, [values.subset(idx) for idx in members], members, labels,
                   [values.subset(idx) for idx in pop_members], pop_members,
                   source.regroup)

    @property
    def replicate_names(self) -> tuple[str, ...]:
        """The keys of :meth:`chunk`."""
        extra = ("pop_user_groups",) if self.regroup is not None else ()
        return ("pop_overall", "pop_groups", "pop_profile", *extra)

    def chunk(self, wf: npt.NDArray[np.float64]) -> dict[str, npt.NDArray[np.float64]]:
        """One chunk of weights ``(b, users)``: ``pop_overall`` ``(b, K)``, ``pop_groups``
        ``(b, G, K)``, ``pop_profile`` ``(b, 1 + G, P)`` (everyone, then each group) and,
        with popularity groups, ``pop_user_groups`` ``(b, len(labels), K + P)``.

        Popularity is recounted in each resample from its weights
        (:meth:`_Recount.resample`), in blocks of resamples that keep memory small. A
        popularity group's training profile (:data:`_RECUT`: what the groups are cut on)
        is that of the group re-cut on the resample (:meth:`_Regroup.memberships`); its
        lists' metrics and test tail share are those of its observed users (measured
        both ways, docs/decisions/0199).
        """
        step = self.everyone.recount.block_size()
        blocks = [self._block(wf[i : i + step]) for i in range(0, wf.shape[0], step)]
        return {name: np.concatenate([b[name] for b in blocks]) for name in blocks[0]}

    def _block(self, wf: npt.NDArray[np.float64]) -> dict[str, npt.NDArray[np.float64]]:
        """:meth:`chunk` of one block of resamples."""
        recount = self.everyone.recount
        items = recount.resample(wf)
        overall, profile = recount.statistics(wf, items)
        groups = [recount.statistics(wf[:, idx], items, idx) for idx in self.members]
        out = {
            "pop_overall": overall,
            "pop_groups": np.stack([m for m, _ in groups], axis=1),
            "pop_profile": np.stack([profile] + [p for _, p in groups], axis=1),
        }
        if self.regroup is not None:
            member = self.regroup.memberships(wf, items.popularity)
            fixed = [recount.statistics(wf[:, idx], items, idx) for idx in self.pop_members]
            recut = [recount.statistics(copies, items)[1] for copies in member]
            out["pop_user_groups"] = np.stack([
                np.hstack([m, np.where(_RECUT, r, p)])
                for (m, p), r in zip(fixed, recut, strict=True)
            ], axis=1)
        return out

    def summaries(
        self, estimate: RuleEstimate, names: list[str], order: list[int]
    ) -> dict[str, Any]:
        """``overall``, ``groups``, ``profile_overall``, ``profile_groups`` and
        ``user_popularity_groups`` of :class:`PopularityBias`, with CIs by ``estimate``
        and :data:`CI_RULE`; ``names[g]`` is the name of attribute group ``g``, ``order``
        the reporting order of the groups. The intervals' centres are the recount at
        every weight 1 (the point estimates, PopRSP/PopREO signed)."""
        items = self.everyone.recount.resample(np.ones((1, self.everyone.means.shape[0])))
        keys = self.everyone.keys
        n_keys = len(keys)

        def section(values: _PopularityValues, users: npt.NDArray[np.intp] | None,
                    metrics_at: _Where, profile_at: _Where
                    ) -> tuple[dict[str, Estimate], dict[str, Estimate]]:
            """The metrics and profile figures of ``values`` (the evaluated users at
            ``users``, all when ``None``); ``(name, index, offset)``: figure ``k``'s
            replicates are ``name[:, *index, offset + k]``."""
            ones = np.ones((1, values.means.shape[0]))
            metrics, profile = values.recount.statistics(ones, items, users)
            point = np.concatenate([values.point(), values.profile_point()])
            centre = np.concatenate([metrics[0], profile[0]])
            out = []
            for figures, (name, index, offset), start in ((keys, metrics_at, 0),
                                                          (PROFILE_FIGURES, profile_at, n_keys)):
                out.append({
                    f: estimate(point[start + k], centre[start + k], _rule_of(f), name,
                                *index, offset + k, support=_support_of(f))
                    for k, f in enumerate(figures)
                })
            return out[0], out[1]

        overall, profile_overall = section(self.everyone, None, ("pop_overall", (), 0),
                                           ("pop_profile", (0,), 0))
        groups = {names[g]: section(self.groups[g], self.members[g], ("pop_groups", (g,), 0),
                                    ("pop_profile", (1 + g,), 0)) for g in order}
        user_groups = {}
        for j, values in enumerate(self.pop_groups):
            metrics, profile = section(values, self.pop_members[j],
                                       ("pop_user_groups", (j,), 0),
                                       ("pop_user_groups", (j,), n_keys))
            user_groups[self.labels[j]] = UserPopularityGroup(
                n_users=int(self.pop_members[j].size), profile=profile, metrics=metrics)
        return {
            "overall": overall,
            "groups": {name: m for name, (m, _) in groups.items()},
            "profile_overall": profile_overall,
            "profile_groups": {name: p for name, (_, p) in groups.items()},
            "user_popularity_groups": user_groups,
        }


@dataclass(frozen=True)
class UserPopularityGroup:
    """One popularity group of users (niche, diverse or blockbuster; or a quantile).

    Attributes
    ----------
    n_users : int
        Evaluated users in the group.
    profile : Mapping[str, Estimate]
        :data:`PROFILE_FIGURES` (user means over the group, with CIs).
    metrics : Mapping[str, Estimate]
        ``<metric>@<N>`` of every popularity-bias metric over the group's users.
    """

    n_users: int
    profile: Mapping[str, Estimate]
    metrics: Mapping[str, Estimate]

    def to_dict(self) -> dict[str, Any]:
        """``{"n_users", <profile figures>, <metric>@<N>...}``, one flat object."""
        return {
            "n_users": self.n_users,
            **{key: est.to_dict() for key, est in self.profile.items()},
            **{key: est.to_dict() for key, est in self.metrics.items()},
        }

    @classmethod
    def from_dict(
        cls, obj: Any, *, where: str, level: float, missing: str,
        ci_rule: Mapping[str, str] = OLDER_CI_RULE,
    ) -> UserPopularityGroup:
        """Read :meth:`to_dict`'s JSON back (``ci_rule``: the section's, the intervals'
        methods)."""
        if not isinstance(obj, Mapping):
            raise InputError(js.SECTION_MSG.format(where=where))
        read = _Reader(level, missing, ci_rule)
        return cls(
            n_users=js.whole(obj, "n_users", where),
            profile=read.profile(obj, where),
            metrics=read.section(obj, where),
        )


@dataclass(frozen=True)
class PopularityBias:
    r"""Popularity-bias metrics of an evaluation, overall and per group, with CIs.

    ``<metric>@<N>`` for every metric of ``arp, aplt, aclt, poprsp, popreo, novelty``
    and cut-off (definitions in ``docs/fairness-metrics.md`` and
    :mod:`recaudit.fairness.popularity._metrics`): the head is the ``ceil(20 %)`` most popular
    catalog items by distinct training users. User means (ARP, APLT, ACLT, novelty)
    and the ratios of sums (PopRSP, PopREO) are taken over the group's evaluated users;
    CIs come from the evaluation's stratified user bootstrap, each figure's by its
    rule (``ci_rule``: :data:`CI_RULE`).

    Attributes
    ----------
    overall : Mapping[str, Estimate]
        Over every evaluated user.
    groups : Mapping[str, Mapping[str, Estimate]]
        Group name -> its values (protected group first).
    n_head_items : int
        Size of the head.
    n_train_users : int
        Distinct users of ``train`` (novelty's normaliser).
    profile_overall, profile_groups : Mapping
        The users' own side (:data:`PROFILE_FIGURES`: mean popularity of their distinct
        training items, tail share of their training and of their test items; user
        means with CIs) over every evaluated user and per group (empty when read from
        a JSON written before them).
    user_popularity_groups : Mapping[str, UserPopularityGroup]
        ``niche``, ``diverse``, ``blockbuster`` (or ``q1`` .. ``qQ``; see
        ``popularity_grouping``): the evaluated users of each, their profile and every
        metric (empty with fewer training users than the grouping needs, or from an
        older JSON).
    popularity_grouping : PopularityGrouping
        The grouping that made ``user_popularity_groups`` (``EvaluateOptions.
        popularity_groups``; the default when read from a JSON written before it).
    ci_rule : Mapping[str, str]
        Metric name (``arp``, ..., without ``@N``) or profile figure -> the rule of its
        CIs, one of :data:`~recaudit._stats.CI_RULES` (:data:`CI_RULE`; every figure
        ``"percentile"`` when read from a JSON written before it, and by default).
    """

    overall: Mapping[str, Estimate]
    groups: Mapping[str, Mapping[str, Estimate]]
    n_head_items: int
    n_train_users: int
    profile_overall: Mapping[str, Estimate] = field(default_factory=dict)
    profile_groups: Mapping[str, Mapping[str, Estimate]] = field(default_factory=dict)
    user_popularity_groups: Mapping[str, UserPopularityGroup] = field(default_factory=dict)
    popularity_grouping: PopularityGrouping = DEFAULT_GROUPING
    ci_rule: Mapping[str, str] = field(default_factory=lambda: OLDER_CI_RULE)

    def to_dict(self) -> dict[str, Any]:
        """``{"head", "n_head_items", "n_train_users", "ci_rule", "overall", "groups",
        "profile": {"overall", "groups"}, "user_popularity_method",
        "user_popularity_rule", "user_popularity_groups"}`` (the method: the grouping's
        name)."""
        return {
            "head": HEAD_RULE,
            "n_head_items": self.n_head_items,
            "n_train_users": self.n_train_users,
            "ci_rule": dict(self.ci_rule),
            "overall": _estimates_dict(self.overall),
            "groups": {name: _estimates_dict(table) for name, table in self.groups.items()},
            "profile": {
                "overall": _estimates_dict(self.profile_overall),
                "groups": {
                    name: _estimates_dict(table) for name, table in self.profile_groups.items()
                },
            },
            "user_popularity_method": self.popularity_grouping.name,
            "user_popularity_rule": self.popularity_grouping.rule,
            "user_popularity_groups": {
                name: group.to_dict() for name, group in self.user_popularity_groups.items()
            },
        }

    @classmethod
    def from_dict(
        cls, obj: Any, *, level: float, missing: str, where: str = SECTION_WHERE
    ) -> PopularityBias:
        """Read :meth:`to_dict`'s JSON back (``level``/``missing``: as for the groups;
        ``ci_rule``, ``profile``, ``user_popularity_method`` and
        ``user_popularity_groups`` may be absent); an interval's method is its figure's
        ``ci_rule``."""
        if not isinstance(obj, Mapping):
            raise InputError(f"{where} must be a JSON object or null")
        groups = _object(need_key(obj, where, js.FAIRNESS_CMD, "groups"), f"{where}.groups")
        profile = _object(find_key(obj, "profile") or {}, f"{where}.profile")
        profile_groups = _object(profile.get("groups") or {}, f"{where}.profile.groups")
        user_groups = _object(
            find_key(obj, "user_popularity_groups") or {}, f"{where}.user_popularity_groups"
        )
        method = find_key(obj, "user_popularity_method")
        rules = _ci_rule(find_key(obj, "ci_rule"), f"{where}.ci_rule")
        read = _Reader(level, missing, rules)
        return cls(
            overall=read.section(need_key(obj, where, js.FAIRNESS_CMD, "overall"),
                                 f"{where}.overall"),
            groups={
                str(name): read.section(table, f"{where}.groups.{name}")
                for name, table in groups.items()
            },
            n_head_items=js.whole(obj, "n_head_items", where),
            n_train_users=js.whole(obj, "n_train_users", where),
            profile_overall=read.profile(profile.get("overall") or {},
                                         f"{where}.profile.overall"),
            profile_groups={
                str(name): read.profile(table, f"{where}.profile.groups.{name}")
                for name, table in profile_groups.items()
            },
            user_popularity_groups={
                str(name): UserPopularityGroup.from_dict(
                    table, where=f"{where}.user_popularity_groups.{name}", level=level,
                    missing=missing, ci_rule=rules)
                for name, table in user_groups.items()
            },
            popularity_grouping=(DEFAULT_GROUPING if method is None else parse_popularity_groups(
                method, name=f"{where}.user_popularity_method")),
            ci_rule=rules,
        )


def _ci_rule(obj: Any, where: str) -> Mapping[str, str]:
    """``ci_rule`` of a JSON (:data:`OLDER_CI_RULE` when absent), each rule checked."""
    if obj is None:
        return OLDER_CI_RULE
    rules = dict(_object(obj, where))
    for figure, rule in rules.items():
        if figure not in CI_RULE or rule not in CI_RULES:
            raise InputError(CI_RULE_MSG.format(where=where, figure=figure, rule=rule,
                                                rules=", ".join(CI_RULES)))
    return MappingProxyType({**OLDER_CI_RULE, **rules})


@dataclass(frozen=True)
class _Reader:
    """Reads the section's estimates: level, the method without bounds, the rules."""

    level: float
    missing: str
    rules: Mapping[str, str]

    def estimate(self, obj: Any, where: str, figure: str) -> Estimate:
        return js.estimate(obj, where, self.level, self.missing,
                           method=RULE_METHOD[self.rules[figure]])

    def profile(self, obj: Any, where: str) -> dict[str, Estimate]:
        """The :data:`PROFILE_FIGURES` of a JSON object (those present, in their order)."""
        if not isinstance(obj, Mapping):
            raise InputError(js.SECTION_MSG.format(where=where))
        return {f: self.estimate(obj[f], f"{where}.{f}", f) for f in PROFILE_FIGURES if f in obj}

    def section(self, obj: Any, where: str) -> dict[str, Estimate]:
        """The ``<metric>@<N>`` estimates of a JSON object, in reporting order."""
        if not isinstance(obj, Mapping):
            raise InputError(js.SECTION_MSG.format(where=where))
        found = {}
        for key, value in obj.items():
            parsed = js.metric_key(key)
            if parsed is not None and parsed[0] in POPULARITY_METRICS:
                found[parsed] = value
        ordered = sorted(found, key=lambda mn: (POPULARITY_METRICS.index(mn[0]), mn[1]))
        return {f"{m}@{n}": self.estimate(found[(m, n)], f"{where}.{m}@{n}", m)
                for m, n in ordered}


def _estimates_dict(table: Mapping[str, Estimate]) -> dict[str, Any]:
    return {key: est.to_dict() for key, est in table.items()}


def _object(obj: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(obj, Mapping):
        raise InputError(f"{where} must be a JSON object")
    return obj
