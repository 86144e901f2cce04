"""Position lift by item class: the estimator against a direct pandas computation, its
value under the mixture model, and its refusals."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from recaudit.exceptions import InputError
from recaudit.positional import (
    ClassPositionLift,
    evaluations_from_table,
    position_lift_by_class,
)


def _simulate(rng, n_queries, k, perms, p_head, p_tail, head_share=0.4):
    """The mixture model with a class-specific p (written apart from the estimator)."""
    rows, classes = [], []
    for q in range(n_queries):
        head = rng.random(k) < head_share
        u = rng.normal(size=k) + head
        pi = np.exp(u) / np.exp(u).sum()
        classes.append(np.where(head, "head", "tail"))
        for _ in range(perms):
            order = rng.permutation(k)
            p = p_head if head[order[0]] else p_tail
            item = order[0] if rng.random() < p else rng.choice(k, p=pi)
            rows.append((f"q{q:04d}", " ".join(str(j + 1) for j in order),
                         int(np.flatnonzero(order == item)[0]) + 1))
    return pd.DataFrame(rows, columns=["query_id", "order", "selected_position"]), \
        np.array(classes)


def _direct(table: pd.DataFrame, classes: np.ndarray, position: int) -> dict[str, float]:
    """Long format, one row per (evaluation, shown candidate), then two group means."""
    long = []
    for r in table.itertuples(index=False):
        order = [int(x) for x in r.order.split()]
        q = int(r.query_id[1:])
        for pos, orig in enumerate(order, start=1):
            long.append((classes[q][orig - 1], pos == position, pos == r.selected_position))
    df = pd.DataFrame(long, columns=["cls", "at", "chosen"])
    rates = df.groupby(["cls", "at"])["chosen"].mean()
    return {g: rates[(g, True)] - rates[(g, False)] for g in ("head", "tail")}


def test_lifts_equal_a_direct_computation_at_every_position():
    rng = np.random.default_rng(7)
    table, classes = _simulate(rng, 40, 5, 6, 0.05, 0.2)
    ev = evaluations_from_table(table)
    for position in (1, 3, 5):
        res = position_lift_by_class(ev, classes, contrast=("head", "tail"),
                                     position=position, n_boot=200, rng=1)
        want = _direct(table, classes, position)
        for g in ("head", "tail"):
            assert res.lift[g].value == pytest.approx(want[g], abs=1e-12)
        assert res.difference.value == pytest.approx(want["tail"] - want["head"], abs=1e-12)


def test_one_p_for_every_class_gives_lift_p_and_no_difference():
    rng = np.random.default_rng(3)
    table, classes = _simulate(rng, 1500, 5, 8, 0.1, 0.1)
    res = position_lift_by_class(evaluations_from_table(table), classes,
                                 contrast=("head", "tail"), n_boot=500, rng=2)
    for g in ("head", "tail"):
        assert res.lift[g].value == pytest.approx(0.1, abs=0.02)
        assert res.lift[g].ci.low < 0.1 < res.lift[g].ci.high
    assert res.difference.ci.low < 0 < res.difference.ci.high
    assert res.pvalue > 0.05


def test_a_stronger_tail_effect_is_found():
    rng = np.random.default_rng(5)
    table, classes = _simulate(rng, 1500, 5, 8, 0.0, 0.2)
    res = position_lift_by_class(evaluations_from_table(table), classes,
                                 contrast=("head", "tail"), n_boot=500, rng=2)
    assert res.difference.ci.low > 0.05 and res.pvalue < 0.01
    assert res.to_dict()["difference"]["value"] == res.difference.value


def test_seeded_and_refusals():
    rng = np.random.default_rng(1)
    table, classes = _simulate(rng, 30, 4, 4, 0.1, 0.1)
    ev = evaluations_from_table(table)
    a = position_lift_by_class(ev, classes, contrast=("head", "tail"), n_boot=200, rng=9)
    b = position_lift_by_class(ev, classes, contrast=("head", "tail"), n_boot=200, rng=9)
    assert a == b
    with pytest.raises(InputError, match="shape"):
        position_lift_by_class(ev, classes[:, :3], contrast=("head", "tail"))
    with pytest.raises(InputError, match="contrast"):
        position_lift_by_class(ev, classes, contrast=("head", "middle"))
    with pytest.raises(InputError, match="position"):
        position_lift_by_class(ev, classes, contrast=("head", "tail"), position=5)
    with pytest.raises(InputError, match="n_boot"):
        position_lift_by_class(ev, classes, contrast=("head", "tail"), n_boot=10)


def test_json_reads_back_to_the_same_result():
    table, classes = _simulate(np.random.default_rng(5), 40, 4, 6, 0.1, 0.2)
    res = position_lift_by_class(evaluations_from_table(table), classes,
                                 contrast=("head", "tail"), n_boot=200, rng=1)
    back = ClassPositionLift.from_dict(json.loads(json.dumps(res.to_dict())))
    assert back.to_dict() == res.to_dict()
    broken = {**res.to_dict(), "pvalue": "0.5"}
    with pytest.raises(InputError, match="pvalue"):
        ClassPositionLift.from_dict(broken)
