"""Popularity bias of top-N lists and the users' popularity groups.

The metrics (:func:`popularity_metrics`: ARP, APLT, ACLT, PopRSP, PopREO, novelty; per
user :func:`per_user_popularity`; the gaps :func:`popularity_parity`) over the head
:func:`head_items`; the niche / diverse / blockbuster user groups
(:func:`user_popularity_groups`, :func:`add_popularity_groups`, named by one
:class:`PopularityGrouping`); and :class:`PopularityBias`, the ``popularity_bias``
section of :func:`recaudit.fairness.evaluate`'s result with its user-level intervals.
The training side each figure reads (``_source``), the recount of the head per
resample (``_recount``) and the regrouping of users per resample (``_regroup``) are
this package's own.
"""

from ._metrics import (
    POPULARITY_METRICS,
    PopularityCounts,
    PopularityPerUser,
    head_items,
    per_user_popularity,
    popularity_metrics,
    popularity_parity,
)
from ._result import PopularityBias, UserPopularityGroup
from ._user_groups import (
    PopularityGrouping,
    add_popularity_groups,
    parse_popularity_groups,
    user_popularity_groups,
)

__all__ = [
    "POPULARITY_METRICS",
    "PopularityBias",
    "PopularityCounts",
    "PopularityGrouping",
    "PopularityPerUser",
    "UserPopularityGroup",
    "add_popularity_groups",
    "head_items",
    "per_user_popularity",
    "popularity_metrics",
    "popularity_parity",
    "parse_popularity_groups",
    "user_popularity_groups",
]
