"""The figures of a joint audit from one positional run: positional bias, the group and
popularity bias of what the LLM recommends (beside its retriever's top-1), and the
position lift by popularity class."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..exceptions import InputError
from ..fairness import EvaluateOptions, FairnessEvaluation, evaluate, head_items
from ..llm import MovieLensTestbed
from ..positional import ClassPositionLift, evaluations_from_table, position_lift_by_class
from ._options import JointOptions

__all__ = ["group_and_popularity", "lift_by_popularity", "modal_picks", "retriever_top1",
           "user_attributes"]


def modal_picks(table: pd.DataFrame) -> pd.DataFrame:
    """Each user's most frequent pick over the orders (its order-free answer; ties go
    to the better-retrieved candidate, decision 0229), as a top-1 recommendation list."""
    ok = table.dropna(subset=["selected_item_id"])
    counts = ok.groupby(["query_id", "selected_item_id", "selected_original_index"]).size()
    best = counts.reset_index(name="n").sort_values(
        ["query_id", "n", "selected_original_index"], ascending=[True, False, True])
    first = best.drop_duplicates("query_id")
    return pd.DataFrame({"user_id": first["query_id"].astype(str).to_numpy(),
                         "item_id": first["selected_item_id"].astype(str).to_numpy(),
                         "rank": 1})


def retriever_top1(candidates: pd.DataFrame) -> pd.DataFrame:
    """The retriever's own best candidate per user, as a top-1 recommendation list."""
    top = candidates[candidates["original_index"] == 1]
    return pd.DataFrame({"user_id": top["query_id"].astype(str).to_numpy(),
                         "item_id": top["item_id"].astype(str).to_numpy(), "rank": 1})


def user_attributes(testbed: MovieLensTestbed, options: JointOptions) -> pd.DataFrame:
    """``user_id`` and the protected attribute of every user; ``InputError`` naming the
    setting when the data has no such column or value (checked before the model runs)."""
    if testbed.users is None or options.attribute not in testbed.users.columns:
        have = [] if testbed.users is None else [c for c in testbed.users.columns
                                                 if c != "user_id"]
        raise InputError(f"`attribute` (--attribute): the users file of {options.data} has "
                         f"no column {options.attribute!r}; it has {have}")
    users = testbed.users[["user_id", options.attribute]]
    values = set(users[options.attribute].astype(str))
    if options.protected not in values:
        raise InputError(f"`protected` (--protected): no user has {options.attribute} = "
                         f"{options.protected!r}; values: {sorted(values)[:10]}")
    return users


def group_and_popularity(recs: pd.DataFrame, testbed: MovieLensTestbed,
                         options: JointOptions, rng: np.random.Generator
                         ) -> FairnessEvaluation:
    """The inter-bias study's metrics at N = 1 of one top-1 list: per-group hit rate and
    NDCG, RD / NRD / IB, ARP, APLT, PopRSP / PopREO, each with its CI
    (:func:`recaudit.fairness.evaluate`)."""
    users = user_attributes(testbed, options)
    try:
        return _evaluate(recs, users, testbed, options, rng)
    except InputError as exc:
        if "min_group_size" not in str(exc):
            raise
        raise InputError(f"{exc}: sample more users (`users`, --users) or lower "
                         f"`min_group_size` (--min-group-size)") from None


def _evaluate(recs: pd.DataFrame, users: pd.DataFrame, testbed: MovieLensTestbed,
              options: JointOptions, rng: np.random.Generator) -> FairnessEvaluation:
    return evaluate(recs, testbed.test, users, attribute=options.attribute,
                    protected=options.protected, n_items=len(testbed.catalog),
                    train=testbed.train,
                    options=EvaluateOptions(n=(1,), n_boot=options.n_boot,
                                            n_resamples=options.n_boot,
                                            min_group_size=options.min_group_size),
                    rng=rng)


def lift_by_popularity(table: pd.DataFrame, candidates: pd.DataFrame,
                       testbed: MovieLensTestbed, options: JointOptions,
                       rng: np.random.Generator) -> ClassPositionLift:
    """Position-1 lift of popular (head: the 20 % most popular by training users, as
    APLT uses) and long-tail candidates, and tail - head
    (:func:`recaudit.positional.position_lift_by_class`)."""
    pop = testbed.train.groupby("item_id")["user_id"].nunique()
    ids = testbed.catalog.items["item_id"].astype(str)
    is_head = head_items(pop.reindex(ids, fill_value=0).to_numpy(), ids.to_numpy())
    head = dict(zip(ids, is_head, strict=True))
    ev = evaluations_from_table(table)
    labels = candidates.assign(cls=candidates["item_id"].astype(str).map(
        lambda i: "head" if head[i] else "tail"))
    grid = labels.pivot(index="query_id", columns="original_index", values="cls")
    item_class = grid.loc[[str(q) for q in ev.query_ids]].to_numpy()
    return position_lift_by_class(ev, item_class, contrast=("head", "tail"),
                                  n_boot=max(options.n_boot, 100), rng=rng)
