"""Planning at small sizes (decision 0415): POB-UNBP's power simulated up to
``SIMULATED_QUERIES`` queries, the between-query variance on the favoured position, and
a pilot planned in its own shape -- each against an independent simulation."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from recaudit.exceptions import InputError
from recaudit.positional import DesignPlan, Effect, effect_from_evaluations, plan_audit, pob_unbp
from recaudit.positional import simulate_evaluations as sim_evaluations
from recaudit.positional._planning import (
    SIMULATED_QUERIES,
    fixed_power,
    fixed_power_curve,
    fixed_queries,
    simulate_shares,
)
from recaudit.positional._unbp import _pob_unbp_shares

REPS = 600  # a rejection rate's SE <= 0.02


def _two_mode(n_q: int, gen: np.random.Generator, k: int = 5, orders: int = 10):
    """SmolLM2's pattern: query j answers position 1 with probability a_j ~ Beta(0.4,
    0.2), else position k (PB 0.6: q = (2/3, 0, 0, 0, 1/3))."""
    ev = sim_evaluations(n_q, k=k, n_perms=orders, p_bias=0.0, rng=gen)
    a = gen.beta(0.4, 0.2, size=n_q)
    position = np.where(gen.random(ev.query.size) < a[ev.query], 0, k - 1).astype(np.int64)
    return dataclasses.replace(ev, position=position,
                               item=ev.orders[np.arange(position.size), position])


def _rate(draw, reps: int = REPS) -> float:
    return float(np.mean([draw() for _ in range(reps)]))


def test_small_sizes_with_between_query_variance_against_pob_unbp():
    """The SmolLM2-like effect (answers nearly all on one position per query): the
    normal approximation said 0.94 at 6 queries, POB-UNBP rejects ~0.72."""
    effect = Effect(k=5, pb=0.6, between=0.06, source="pilot")
    q = effect.means()
    conc = float((q * (1 - q)).mean()) / effect.between - 1.0
    gen = np.random.default_rng(21)

    def reject(n: int) -> bool:
        laws = gen.dirichlet(q * conc, size=n)
        counts = np.stack([gen.multinomial(10, law) for law in laws])
        return _pob_unbp_shares(counts / 10, 0.05, 0.0, "pooled", "both", 2).reject

    for n in (4, 6, 8):
        planned = fixed_power(effect, orders=10, queries=n, alpha=0.05)
        assert planned == pytest.approx(_rate(lambda n=n: reject(n)), abs=0.06), n


def test_a_two_mode_pilot_plans_a_size_that_reaches_the_target():
    """A pilot whose answers fall on the first and the last position: planned in its
    own shape and simulated below 30 queries, the plan's size rejects as often as it
    says, or more (before: 6 queries at 0.94 for a true ~0.55 on the SmolLM2 pool)."""
    gen = np.random.default_rng(22)
    effect = effect_from_evaluations(_two_mode(80, gen).to_frame(), rng=1)
    assert effect.profile is not None
    assert effect.profile[0] > 0 and effect.profile[-1] > 0  # both favoured
    n = fixed_queries(effect, orders=10, power=0.8, alpha=0.05)
    assert n is not None and n <= SIMULATED_QUERIES
    planned = fixed_power(effect, orders=10, queries=n, alpha=0.05)
    rate = _rate(lambda: pob_unbp(_two_mode(n, gen), alpha=0.05).reject)
    assert planned >= 0.8 and rate >= 0.8 - 0.06
    assert rate >= planned - 0.06  # honest or conservative (the pilot's PB is an estimate)


def test_fixed_queries_is_where_the_simulated_power_stays_at_the_target():
    """POB-UNBP's power is not monotone at a few queries (2 queries answering one
    position: variance 0, a rejection): the size is where it stays."""
    effect = Effect(k=5, pb=0.6, between=0.06, source="pilot")
    curve = fixed_power_curve(effect, orders=10, alpha=0.05, answers="sampled")
    assert curve[0] >= 0.5 > curve[1]  # 2 queries reject more often than 3
    n = fixed_queries(effect, orders=10, power=0.5, alpha=0.05)
    assert n is not None and n > 2
    assert min(curve[n - 2:]) >= 0.5 > curve[n - 3]


def test_between_variance_falls_on_the_favoured_position():
    """share_covariance against simulate_shares' Dirichlet model: the favoured position
    carries most of tau^2 (the old tau^2 C_0 put 0.058 there; 0.079 simulated)."""
    effect = Effect(k=5, pb=0.3, between=0.03, source="pilot")
    shares = simulate_shares(effect, answers="sampled", orders=8, queries=400, reps=10,
                             gen=np.random.default_rng(23)).reshape(-1, 5)
    np.testing.assert_allclose(np.cov(shares.T), effect.share_covariance("sampled", 8),
                               atol=0.004)


def test_the_plan_says_how_it_got_the_power():
    small = plan_audit(Effect.from_p_bias(0.3, k=5), orders=20, designs=["fixed"],
                       half_width_reps=5, rng=0).designs[0]
    large = plan_audit(Effect.from_p_bias(0.03, k=5), orders=20, designs=["fixed"],
                       half_width_reps=5, rng=0).designs[0]
    assert small.queries is not None and small.queries <= SIMULATED_QUERIES
    assert small.power_method.startswith("simulation") and small.power_se > 0
    assert large.queries is not None and large.queries > SIMULATED_QUERIES
    assert (large.power_method, large.power_se) == ("normal approximation", None)


def test_a_profile_reads_back_and_is_checked():
    profile = (0.75, -1 / 3, -1 / 3, -1 / 3, 0.25)
    effect = Effect(k=5, pb=0.6, between=0.05, source="pilot", profile=profile)
    np.testing.assert_allclose(effect.means(), [0.65, 0.0, 0.0, 0.0, 0.35], atol=1e-12)
    back = Effect.from_dict(json.loads(json.dumps(effect.to_dict())))
    assert back == effect
    old = {k: v for k, v in effect.to_dict().items() if k != "profile"}
    assert Effect.from_dict(old).profile is None  # a plan written before
    with pytest.raises(InputError, match="`profile` must be k = 5"):
        Effect(k=5, pb=0.1, profile=(0.5, 0.5, -0.5, 0.0, 0.0))
    with pytest.raises(InputError, match="`pb` must be at most 0.6"):
        Effect(k=5, pb=0.7, profile=profile)


def test_an_approximated_power_has_no_monte_carlo_se_also_in_old_plans():
    plan = plan_audit(Effect.from_p_bias(0.03, k=5), orders=20, designs=["fixed"],
                      half_width_reps=5, rng=0).designs[0]
    old = {**plan.to_dict(), "power_se": 0.0}  # how plans before 2026-12-06 stored it
    assert DesignPlan.from_dict(plan.to_dict()).power_se is None
    assert DesignPlan.from_dict(old).power_se is None
