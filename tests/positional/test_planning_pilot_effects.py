"""A pilot with choice-probability vectors plans two effects: its answers' for the
sampled designs, its vectors' for the exact ones; plans written before read back."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from recaudit.audit import choose_design
from recaudit.exceptions import InputError
from recaudit.positional import (
    AuditPlan,
    DesignPlan,
    Effect,
    effect_from_evaluations,
    plan_audit,
    simulate_evaluations,
)

FAST = {"reps": 100, "half_width_reps": 10}


def _greedy_pilot(p_bias: float = 0.15, queries: int = 60) -> pd.DataFrame:
    """A temperature-0 pilot: each evaluation's vector the section-8 law (relevance
    spread, ``p_bias`` on position 1), its answer the vector's argmax -- the answers
    far more biased than the vectors, as on the packaged models."""
    ev, rel = simulate_evaluations(queries, k=5, n_perms=10, p_bias=p_bias, rng=11,
                                   return_truth=True)
    table = ev.to_frame()
    shown = rel[ev.query[:, None], ev.orders]
    probs = (1 - p_bias) * shown / shown.sum(axis=1, keepdims=True)
    probs[:, 0] += p_bias
    jitter = np.random.default_rng(12).random(probs.shape) * 1e-9  # break ties
    table["selected_position"] = np.argmax(probs + jitter, axis=1) + 1
    table["choice_probs"] = [json.dumps(list(p)) for p in probs]
    return table


@pytest.fixture(scope="module")
def effects() -> tuple[Effect, Effect]:
    table = _greedy_pilot()
    return (effect_from_evaluations(table, exact=False, rng=0),
            effect_from_evaluations(table, exact=True, rng=0))


def test_the_pilot_s_answers_are_more_biased_than_its_vectors(effects):
    answers, vectors = effects
    assert (answers.measured_on, vectors.measured_on) == ("answers", "vectors")
    assert answers.ci_low > vectors.ci_high  # the setting of the defect


def test_sampled_designs_get_the_answers_effect_exact_designs_the_vectors(effects):
    answers, vectors = effects
    plan = plan_audit(answers, exact_effect=vectors, orders=10, rng=1, **FAST)
    before = plan_audit(vectors, orders=10, rng=1, **FAST)  # every design on the vectors
    by, old = ({d.design: d for d in p.designs} for p in (plan, before))
    for name in ("fixed", "sequential"):
        assert by[name].effect == answers
        assert by[name].queries < old[name].queries
        assert by[name].calls < old[name].calls
    for name in ("exact", "exact+sequential"):
        assert by[name].effect == vectors == old[name].effect
    # the fixed exact design's size and power are the normal approximation's: unchanged
    assert (by["exact"].queries, by["exact"].power, by["exact"].calls) == (
        old["exact"].queries, old["exact"].power, old["exact"].calls)
    assert by["exact+sequential"].power >= 0.8
    assert any("on the answers" in n for n in plan.notes)
    assert any("on the vectors" in n for n in plan.notes)
    assert any("the exact design needs" in n for n in plan.notes)


def test_a_pilot_without_vectors_plans_every_design_with_its_answers(effects):
    answers, _ = effects
    plan = plan_audit(answers, orders=10, designs=["fixed", "exact"], rng=1, **FAST)
    assert plan.exact_effect is None
    assert all(d.effect == answers for d in plan.designs)


def test_two_effects_round_trip_through_json(effects):
    answers, vectors = effects
    plan = plan_audit(answers, exact_effect=vectors, orders=10, rng=1, **FAST)
    assert AuditPlan.from_dict(json.loads(json.dumps(plan.to_dict()))) == plan
    rows = json.loads(json.dumps(plan.to_list()))
    for row, design in zip(rows, plan.designs, strict=True):
        assert DesignPlan.from_dict(row) == design
        assert row["pb"] == design.effect.pb
        assert row["effect"]["measured_on"] == design.effect.measured_on
        assert row["effect"]["ci_low"] == design.effect.ci_low


def test_a_plan_written_before_designs_carried_their_effect_reads_back(effects):
    """`run --plan` and AuditPlan.from_dict read a plan without per-design effects,
    without `exact_effect` and without `measured_on`: every design gets the one effect
    it was planned with."""
    answers, _ = effects
    plan = plan_audit(answers, orders=10, rng=1, **FAST)
    old = plan.to_dict()
    del old["exact_effect"]
    del old["effect"]["measured_on"]
    for d in old["designs"]:
        del d["effect"]
    read = AuditPlan.from_dict(json.loads(json.dumps(old)))
    assert read.exact_effect is None and read.effect.measured_on is None
    assert all(d.effect == read.effect for d in read.designs)
    assert [d.queries for d in read.designs] == [d.queries for d in plan.designs]
    rows = plan.to_list()
    for row in rows:
        del row["effect"]
    chosen = choose_design(rows, None)
    assert chosen.effect is None and chosen.cheapest


def test_the_two_effects_must_share_k(effects):
    answers, _ = effects
    with pytest.raises(InputError, match="`exact_effect` must have the effect's k = 5"):
        plan_audit(answers, exact_effect=Effect(k=4, pb=0.1), orders=10, **FAST)
    with pytest.raises(InputError, match="`measured_on` must be"):
        Effect(k=5, pb=0.1, measured_on="probabilities")
