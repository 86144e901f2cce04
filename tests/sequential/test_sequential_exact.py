"""The e-processes on choice-probability vectors (`positional._sequential_exact`) and
the alternatives generator: exact martingale property by enumeration, factors bounded
away from 0, agreement with the sampled `favoured` e-process on one-hot vectors,
type-I error by a quick simulation, power where `favoured` is blind, input checks."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from recaudit.exceptions import InputError
from recaudit.positional._alternatives import (
    ALTERNATIVES,
    alternative_pb,
    position_law,
    sample_positions,
    simulate_choice_vectors,
)
from recaudit.positional._sequential import log_e_values, sequential_uniformity_test
from recaudit.positional._sequential_exact import (
    EXACT_SEQUENTIAL_METHODS,
    MIN_FACTOR,
    MSG_PROBS,
    log_e_vectors,
    sequential_exact_test,
)


def test_against_sampled_favoured_on_one_hot_vectors():
    rng = np.random.default_rng(3)
    for k in (2, 5, 10):
        pos = np.where(rng.random((8, 400)) < 0.1, 0, rng.integers(0, k, (8, 400)))
        fav = log_e_values(pos, k, method="favoured")
        assert np.allclose(log_e_vectors(np.eye(k)[pos], method="favoured"), fav,
                           atol=1e-12)


def test_favoured_is_unchanged_when_the_vectors_shrink_towards_uniform():
    """The prior is in the vectors' own units: shrinking every vector towards uniform,
    u + lam (x - u), scales the drift by lam and the second moments (sums and prior) by
    lam^2, so the bet grows by 1/lam and every factor is the same (while the cap does
    not bind: on this data set of graded preferences the favoured bet stays below it; on
    others an early noisy step can reach it). A prior fixed at the one-hot value (the
    former rule) bets less on the shrunk vectors and fails this test."""
    gen = np.random.default_rng(0)
    v = simulate_choice_vectors("graded", 20, 50, k=5, orders=20, strength=0.05, gen=gen)
    ref = log_e_vectors(v, method="favoured")
    assert np.abs(ref[:, -1]).max() > 0.5  # it bets
    for lam in (0.8, 0.5):
        shrunk = 0.2 + lam * (v - 0.2)
        assert np.allclose(log_e_vectors(shrunk, method="favoured"), ref, atol=1e-9)


@pytest.mark.parametrize("method", EXACT_SEQUENTIAL_METHODS)
def test_martingale_exactly_by_enumeration(method):
    """Null: one query's item law mu relabelled by a uniform random order (3! orders),
    4 evaluations: E[E_t | past] = E_{t-1} on every prefix, so E[E_4] = 1 exactly."""
    k, steps = 3, 4
    mu = np.array([0.7, 0.25, 0.05])
    vectors = [mu[list(np.argsort(order))] for order in itertools.permutations(range(k))]
    # vectors[j] is the position law under order j; their mean is uniform
    assert np.allclose(np.mean(vectors, axis=0), 1 / k)
    paths = np.array([np.stack([vectors[i] for i in seq])
                      for seq in itertools.product(range(len(vectors)), repeat=steps)])
    # strong bets: run the same paths after a long biased prefix, so b is large
    prefix = np.tile(np.array([[0.9, 0.05, 0.05]]), (60, 1)) if method != "disfavoured" \
        else np.tile(np.array([[0.02, 0.49, 0.49]]), (60, 1))
    full = np.concatenate([np.broadcast_to(prefix, (len(paths), *prefix.shape)), paths],
                          axis=1)
    e = np.exp(log_e_vectors(full, method=method))
    base = e[:, 59]
    assert np.std(e[:, -1] / base) > 0.05  # it bets, not a trivial 1
    for t in range(60, 60 + steps):
        # group paths by their prefix up to t-1: the mean of E_t over the next vector
        grouped = e[:, t].reshape(-1, len(vectors) ** (60 + steps - t))
        prev = e[:, t - 1].reshape(grouped.shape)
        assert np.allclose(grouped.mean(axis=1), prev[:, 0], rtol=1e-12, atol=0)
    assert np.mean(e[:, -1] / base) == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("method", ["disfavoured", "plugin", "omnibus"])
def test_sampled_new_methods_are_martingales_by_enumeration(method):
    k, steps = 3, 6
    seqs = np.array(list(itertools.product(range(k), repeat=steps)))
    e = np.exp(log_e_values(seqs, k, method=method))
    assert np.mean(e[:, -1]) == pytest.approx(1.0, abs=1e-12)
    assert np.all(e >= 0)


@pytest.mark.parametrize("method", ["favoured", "disfavoured", "plugin"])
def test_every_factor_is_at_least_the_floor(method):
    rng = np.random.default_rng(5)
    k = 6
    # adversarial: a strong early pattern, then the opposite, one-hot and spiky vectors
    early = np.eye(k)[np.zeros(300, dtype=int)]
    late = rng.dirichlet(np.full(k, 0.05), size=300)
    x = np.concatenate([early, late])[None]
    steps = np.diff(np.r_[0.0, log_e_vectors(x, method=method)[0]])
    assert np.all(np.isfinite(steps))
    assert steps.min() >= np.log(MIN_FACTOR) - 1e-12


def test_type_one_error_under_monitoring_after_every_evaluation():
    """Null (crisp relevance sets, fresh orders), 300 paths x 1,500 evaluations at
    k = 5: ever crossing 1/alpha = 20 at most alpha (loose bound for 300 paths)."""
    gen = np.random.default_rng(11)
    v = simulate_choice_vectors("first", 300, 75, k=5, orders=20, strength=0.0, gen=gen)
    for x in (v, np.eye(5)[sample_positions(v, gen)]):
        for method in ("favoured", "omnibus"):
            crossed = (log_e_vectors(x, method=method) >= np.log(20)).any(axis=1)
            assert crossed.mean() <= 0.09, method


def test_exact_omnibus_detects_a_diffuse_aversion_that_favoured_misses():
    gen = np.random.default_rng(2)
    v = simulate_choice_vectors("diffuse", 60, 200, k=5, orders=16, strength=0.1, gen=gen)
    hit = {m: (log_e_vectors(v, method=m) >= np.log(20)).any(axis=1).mean()
           for m in ("favoured", "omnibus")}
    assert hit["omnibus"] >= 0.8 and hit["favoured"] <= 0.5


def test_exact_needs_fewer_evaluations_than_sampled_on_the_paper_model():
    gen = np.random.default_rng(4)
    v = simulate_choice_vectors("first", 40, 100, k=10, orders=20, strength=0.1, gen=gen)
    oh = np.eye(10)[sample_positions(v, gen)]
    first = {}
    for name, x in (("exact", v), ("sampled", oh)):
        crossed = log_e_vectors(x, method="favoured") >= np.log(20)
        first[name] = np.where(crossed.any(axis=1), crossed.argmax(axis=1), x.shape[1]).mean()
    assert first["exact"] < 0.5 * first["sampled"]


def test_result_fields_and_expected_counts():
    gen = np.random.default_rng(0)
    v = simulate_choice_vectors("first", 1, 50, k=4, orders=20, strength=0.3, gen=gen)[0]
    res = sequential_exact_test(v, alpha=0.05, method="omnibus")
    assert res.reject and res.stopped_at < len(v)
    assert res.counts.sum() == pytest.approx(res.stopped_at)
    assert np.all(res.cs_low <= res.counts / res.stopped_at + 1e-9)
    assert np.all(res.counts / res.stopped_at <= res.cs_high + 1e-9)
    assert res.to_dict()["method"] == "omnibus"
    looked = sequential_exact_test(v, alpha=0.05, checkpoints=[100, 200, 300])
    assert looked.stopped_at in (100, 200, 300)


@pytest.mark.parametrize(("probs", "what"), [
    (np.ones((3, 1)), "shape"),
    (np.array([[0.5, 0.6], [0.5, 0.5]]), "summing to"),
    (np.array([[1.5, -0.5]]), "negative"),
    (np.array([[np.nan, 1.0]]), "non-finite"),
])
def test_bad_vectors_are_refused(probs, what):
    with pytest.raises(InputError, match=what):
        sequential_exact_test(probs)
    assert "choice-probability vectors" in MSG_PROBS


def test_bad_method_and_checkpoints_are_refused():
    v = np.full((10, 3), 1 / 3)
    with pytest.raises(InputError, match="`method`"):
        sequential_exact_test(v, method="dirichlet")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="`checkpoints`"):
        sequential_exact_test(v, checkpoints=[5, 3])


def test_sampled_test_offers_the_new_methods():
    rng = np.random.default_rng(1)
    # avoid position 0: a diffuse aversion
    pos = np.where(rng.random(4000) < 0.3, rng.integers(1, 5, 4000), rng.integers(0, 5, 4000))
    res = {m: sequential_uniformity_test(pos, k=5, method=m).reject
           for m in ("favoured", "omnibus", "disfavoured", "plugin")}
    assert res["omnibus"] and res["disfavoured"] and res["plugin"]


@pytest.mark.parametrize("model", ALTERNATIVES)
def test_alternatives_have_their_stated_mean(model):
    gen = np.random.default_rng(9)
    k, s = 5, 0.2
    v = simulate_choice_vectors(model, 4, 2000, k=k, orders=5, strength=s, gen=gen)
    assert np.allclose(v.sum(axis=-1), 1.0)
    q = s * position_law(model, k) + (1 - s) / k
    assert np.allclose(v.mean(axis=(0, 1)), q, atol=0.006)
    assert alternative_pb(model, k, s) == pytest.approx(0.5 * np.abs(q - 1 / k).sum())
