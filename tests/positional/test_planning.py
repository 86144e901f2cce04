"""The audit planner's statistics against brute-force simulation at small sizes."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest

from recaudit.exceptions import InputError
from recaudit.positional import (
    AuditPlan,
    CallCost,
    Effect,
    effect_from_evaluations,
    plan_audit,
    positional_bias,
    power_study,
    sequential_uniformity_test,
    simulate_evaluations,
)
from recaudit.positional._planning import (
    _expected_inverse_set_size,
    fixed_power,
    fixed_queries,
    pb_half_width,
    queries_for_half_width,
    sequential_stopping_times,
    simulate_shares,
)
from recaudit.positional._sequential import DEFAULT_SEQUENTIAL_METHOD, log_e_values
from recaudit.positional._simulation import exact_query_shares


def test_expected_inverse_set_size_against_enumeration():
    for k in (2, 4, 6):
        sizes = [sum(s) for s in itertools.product((0, 1), repeat=k) if sum(s)]
        assert _expected_inverse_set_size(k) == pytest.approx(np.mean([1 / r for r in sizes]))


@pytest.mark.parametrize("answers", ["sampled", "exact"])
def test_share_variances_against_simulated_shares(answers):
    effect = Effect.from_p_bias(0.2, k=5)
    gen = np.random.default_rng(3)
    if answers == "sampled":
        shares = simulate_shares(effect, answers="sampled", orders=8, queries=400, reps=10,
                                 gen=gen)
    else:
        shares = exact_query_shares(10, 400, k=5, n_perms=8, p_bias=0.2, gen=gen)
    empirical = shares.reshape(-1, 5).var(axis=0, ddof=1)
    # 4,000 queries: the sd of a sample variance is ~2.5 %
    np.testing.assert_allclose(empirical, effect.share_variances(answers, 8), rtol=0.1)
    cov = np.cov(shares.reshape(-1, 5).T)
    np.testing.assert_allclose(cov, effect.share_covariance(answers, 8), atol=0.002)


@pytest.mark.parametrize(("p_bias", "queries"), [(0.0, 30), (0.1, 25), (0.2, 8)])
def test_fixed_power_against_brute_force(p_bias, queries):
    effect = Effect.from_p_bias(p_bias, k=5)
    planned = fixed_power(effect, orders=10, queries=queries, alpha=0.05)
    study = power_study(k=[5], queries=[queries], perms=10, p_bias=[p_bias], reps=2000,
                        tests=("pob_unbp",), rng=4)
    assert planned == pytest.approx(study.rows[0].rejection_rate, abs=0.05)


def test_fixed_queries_is_the_smallest_reaching_the_target():
    effect = Effect.from_p_bias(0.05, k=5)
    n = fixed_queries(effect, orders=20, power=0.8, alpha=0.05)
    assert n is not None
    assert fixed_power(effect, orders=20, queries=n, alpha=0.05) >= 0.8
    assert fixed_power(effect, orders=20, queries=n - 1, alpha=0.05) < 0.8
    assert fixed_queries(Effect.from_p_bias(0.0, k=5), orders=20, power=0.8,
                         alpha=0.05) is None


def test_exact_needs_fewer_queries_than_sampled():
    effect = Effect.from_p_bias(0.05, k=10)
    sampled = fixed_queries(effect, orders=20, power=0.8, alpha=0.05)
    exact = fixed_queries(effect, orders=20, power=0.8, alpha=0.05, answers="exact")
    assert sampled is not None and exact is not None and exact < sampled / 2


def test_sequential_stopping_against_an_independent_generator():
    """The planner's paths (power_study's numba generator) against simulate_evaluations'
    data read by the public test's e-process."""
    effect = Effect.from_p_bias(0.2, k=5)
    tau = sequential_stopping_times(effect, orders=10, max_queries=6, alpha=0.05, reps=800,
                                    gen=np.random.default_rng(5))
    planned = float(np.mean(np.isfinite(tau)))
    gen = np.random.default_rng(6)
    paths = [simulate_evaluations(6, k=5, n_perms=10, p_bias=0.2, rng=gen).position
             for _ in range(800)]
    log_e = log_e_values(np.stack(paths), 5, method=DEFAULT_SEQUENTIAL_METHOD)
    crossed = log_e.max(axis=1) >= math.log(20)
    for pos, hit in zip(paths[:10], crossed[:10], strict=True):  # the kernel is the test's
        assert sequential_uniformity_test(pos, k=5, alpha=0.05).reject == hit
    se = math.sqrt(0.25 / 800 * 2)
    assert planned == pytest.approx(crossed.mean(), abs=3 * se)


def test_sequential_type_one_error_at_most_alpha():
    tau = sequential_stopping_times(Effect.from_p_bias(0.0, k=5), orders=20, max_queries=50,
                                    alpha=0.05, reps=1000, gen=np.random.default_rng(7))
    assert np.mean(np.isfinite(tau)) <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 1000)


def test_pb_half_width_against_positional_bias():
    effect = Effect.from_p_bias(0.1, k=5)
    planned, se = pb_half_width(effect, answers="sampled", orders=10, queries=30, reps=60,
                                gen=np.random.default_rng(8))
    gen = np.random.default_rng(9)
    widths = []
    for _ in range(60):
        ci = positional_bias(simulate_evaluations(30, k=5, n_perms=10, p_bias=0.1, rng=gen),
                             rng=gen).ci
        widths.append((ci.high - ci.low) / 2)
    assert se > 0
    assert planned == pytest.approx(np.mean(widths), rel=0.1)


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"k": 5, "pb": 0.9}, r"`pb` must be in \[0, 1 - 1/k\]"),
    ({"k": 1, "pb": 0.0}, "`k` must be an integer >= 2"),
    ({"k": 5, "pb": 0.1, "between": -1.0}, "`between` must be a finite number >= 0"),
    ({"k": 5, "pb": 0.1, "discard_rate": 1.0}, "`discard_rate` must be < 1"),
])
def test_effect_refuses_bad_values(kwargs, match):
    with pytest.raises(InputError, match=match):
        Effect(**kwargs)


def test_plan_refuses_bad_arguments():
    effect = Effect.from_p_bias(0.1, k=5)
    with pytest.raises(InputError, match="`power` must be in"):
        plan_audit(effect, orders=20, power=0.01)
    with pytest.raises(InputError, match="`designs` must be a subset"):
        plan_audit(effect, orders=20, designs=["sequential+exact"])
    with pytest.raises(InputError, match="`queries` must be an integer >= 2"):
        plan_audit(effect, orders=20, queries=1)
    with pytest.raises(InputError, match=r"`p_bias` must be in \[0, 1\]"):
        Effect.from_p_bias(1.5, k=5)


def test_plan_sizes_prices_and_marks_the_cheapest():
    cost = CallCost(prompt_tokens=500, completion_tokens=20, calls_per_s=10, price_in=1.0,
                    price_out=4.0)
    plan = plan_audit(Effect.from_p_bias(0.1, k=5), orders=20, temperatures=2, cost=cost,
                      reps=200, half_width_reps=20, rng=1)
    by = {d.design: d for d in plan.designs}
    assert set(by) == {"fixed", "sequential", "exact", "exact+sequential"}
    for d in plan.designs:
        assert d.alpha_per_cell == pytest.approx(0.025)
        assert d.calls_max == d.queries * 20 * 2
        assert d.money == pytest.approx(d.calls * (500 * 1.0 + 20 * 4.0) / 1e6)
        assert d.wall_s == pytest.approx(d.calls / 10)
        assert d.adequate == (d.power >= 0.8)
    assert by["fixed"].calls == by["fixed"].calls_max
    assert by["sequential"].calls < by["sequential"].calls_max
    assert by["exact"].queries < by["fixed"].queries
    assert by["exact+sequential"].calls < by["sequential"].calls
    cheapest = [d for d in plan.designs if d.cheapest]
    assert len(cheapest) == 1
    assert cheapest[0].money == min(d.money for d in plan.designs if d.adequate)
    assert AuditPlan.from_dict(json.loads(json.dumps(plan.to_dict()))) == plan
    rows = plan.to_list()
    assert all({"design", "queries", "calls", "power", "k", "orders", "alpha"} <= set(r)
               for r in rows)


def test_plan_at_given_queries_reports_power_and_half_width():
    plan = plan_audit(Effect.from_p_bias(0.0, k=5), orders=20, queries=40, reps=200,
                      half_width_reps=20, rng=2)
    by = {d.design: d for d in plan.designs}
    assert by["fixed"].queries == 40 and by["fixed"].power < 0.1
    assert by["fixed"].pb_half_width > 0 and by["sequential"].pb_half_width is None
    assert plan.cheapest is None


@pytest.mark.parametrize(("p_bias", "answers", "target"), [
    (0.1, "sampled", 0.02), (0.03, "exact", 0.01), (0.0, "sampled", 0.02)])
def test_queries_for_half_width_is_about_the_smallest(p_bias, answers, target):
    """The planned size reaches the width on fresh simulations of the estimator and a
    size 15 % smaller does not (the search lands within its 10 % steps)."""
    effect = Effect.from_p_bias(p_bias, k=5)
    n, hw, se = queries_for_half_width(effect, answers=answers, orders=20, target=target,
                                       reps=60, gen=np.random.default_rng(3))
    assert hw <= target and se < 0.05 * target
    fresh = np.random.default_rng(4)
    at_n, at_n_se = pb_half_width(effect, answers=answers, orders=20, queries=n, reps=60,
                                  gen=fresh)
    smaller, _ = pb_half_width(effect, answers=answers, orders=20,
                               queries=max(2, int(0.85 * n)), reps=60, gen=fresh)
    assert at_n <= target + 3 * at_n_se and smaller > target


def test_plan_for_a_half_width_marks_the_width_and_round_trips():
    plan = plan_audit(Effect.from_p_bias(0.1, k=5), orders=20, half_width=0.02,
                      half_width_reps=30, rng=5)
    by = {d.design: d for d in plan.designs}
    assert by["fixed"].pb_half_width <= 0.02 and by["exact"].pb_half_width <= 0.02
    assert by["sequential"].queries is None and "fixed-sample target" in by["sequential"].note
    assert plan.cheapest == "exact" and plan.target_half_width == 0.02
    assert AuditPlan.from_dict(json.loads(json.dumps(plan.to_dict()))) == plan
    with pytest.raises(InputError, match="`half_width` must be a number in"):
        plan_audit(Effect.from_p_bias(0.1, k=5), orders=20, half_width=0.02, queries=40)


def _pilot_table(p_bias: float, exact: bool) -> object:
    ev, rel = simulate_evaluations(150, k=5, n_perms=10, p_bias=p_bias, rng=10,
                                   return_truth=True)
    table = ev.to_frame()
    if exact:
        shown = rel[ev.query[:, None], ev.orders]
        probs = (1 - p_bias) * shown / shown.sum(axis=1, keepdims=True)
        probs[:, 0] += p_bias
        table["choice_probs"] = [json.dumps(list(p)) for p in probs]
    return table


@pytest.mark.parametrize("exact", [False, True])
def test_effect_from_a_pilot_covers_the_truth(exact):
    effect = effect_from_evaluations(_pilot_table(0.2, exact), exact=exact, rng=3)
    truth = 0.2 * (1 - 1 / 5)
    assert effect.source == "pilot" and effect.pilot_queries == 150
    assert effect.ci_low <= truth <= effect.ci_high
    assert effect.between < 0.003  # the section-8 model has none
    if exact:
        model = Effect.from_p_bias(0.2, k=5).share_variances("exact", 1).mean()
        assert effect.within_exact == pytest.approx(model, rel=0.15)
    plan = plan_audit(effect, orders=10, reps=100, half_width_reps=10, rng=4)
    assert any("pilot: PB =" in note for note in plan.notes)


def test_exact_sequential_design_needs_fewer_calls_than_sampled_sequential():
    """The exact+sequential design (the e-process on the per-evaluation choice
    vectors) is planned by simulation and needs fewer expected calls than the sampled
    sequential design at the same power."""
    effect = Effect.from_p_bias(0.05, k=5)
    plan = plan_audit(effect, orders=20, designs=["sequential", "exact+sequential"],
                      reps=200, rng=3)
    seq, exact_seq = plan.designs
    assert exact_seq.design == "exact+sequential" and exact_seq.power >= 0.8
    assert exact_seq.to_dict()["answers"] == "exact"
    assert exact_seq.to_dict()["stopping"] == "sequential"
    assert exact_seq.calls < 0.6 * seq.calls


def test_exact_stopping_times_from_a_pilots_variance_components():
    effect = Effect(k=5, pb=0.04, between=0.002, within_exact=0.02, source="pilot")
    tau = sequential_stopping_times(effect, orders=10, max_queries=40, alpha=0.05, reps=100,
                                    gen=np.random.default_rng(1), answers="exact")
    assert np.isfinite(tau).mean() > 0.5


def test_call_cost_batch_discount_scales_the_money_and_round_trips():
    live = CallCost(prompt_tokens=500, completion_tokens=20, price_in=1.0, price_out=4.0)
    batch = CallCost(prompt_tokens=500, completion_tokens=20, price_in=1.0, price_out=4.0,
                     batch_discount=0.5)
    assert batch.spend(1000)["money"] == pytest.approx(0.5 * live.spend(1000)["money"])
    assert batch.spend(1000)["prompt_tokens"] == live.spend(1000)["prompt_tokens"]
    assert CallCost.from_dict(json.loads(json.dumps(batch.to_dict()))) == batch
    older = {k: v for k, v in live.to_dict().items() if k != "batch_discount"}
    assert CallCost.from_dict(older).batch_discount == 1.0  # a plan written before it
    for bad in (0.0, 1.5, float("nan")):
        with pytest.raises(InputError, match="batch_discount"):
            CallCost(batch_discount=bad)
