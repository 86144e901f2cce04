"""The anytime-valid uniformity test: martingale property, Ville, power, CSs."""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest

from recaudit._stats import binomial_interval
from recaudit.exceptions import InputError
from recaudit.positional import (
    position_confidence_sequences,
    sequential_uniformity_test,
    simulate_evaluations,
)
from recaudit.positional._sequential import (
    MSG_CHECKPOINTS,
    MSG_K,
    MSG_METHOD,
    MSG_POSITIONS,
    SEQUENTIAL_METHODS,
    _beta_cs,
    log_e_from_counts,
    log_e_values,
)


@pytest.mark.parametrize("method", SEQUENTIAL_METHODS)
@pytest.mark.parametrize(("k", "t"), [(2, 7), (3, 5), (4, 4)])
def test_e_value_has_expectation_one_under_the_null_exactly(method, k, t):
    # every sequence of length t is equally likely under H0: E[E_s] = 1 for each s <= t
    seqs = np.array(list(itertools.product(range(k), repeat=t)), dtype=np.int64)
    paths = np.exp(log_e_values(seqs, k, method=method))
    assert paths.mean(axis=0) == pytest.approx(np.ones(t), rel=1e-9)
    assert np.all(paths >= 0)


def test_dirichlet_path_against_closed_form_from_counts():
    rng = np.random.default_rng(3)
    pos = rng.integers(0, 6, size=(5, 300))
    path = log_e_values(pos, 6, method="dirichlet")
    for r in range(5):
        for t in (1, 17, 300):
            counts = np.bincount(pos[r, :t], minlength=6)
            assert path[r, t - 1] == pytest.approx(log_e_from_counts(counts), abs=1e-9)


@pytest.mark.parametrize("k", [5, 10])
def test_type_one_error_under_optional_stopping(k):
    # 400 null sequences of 2,000 evaluations, looked at after every one: Ville bounds
    # the chance of EVER crossing 1/alpha by alpha
    ev = simulate_evaluations(400 * 100, k=k, n_perms=20, p_bias=0.0, rng=k)
    pos = ev.position.reshape(400, 2000)
    crossed = (log_e_values(pos, k, method="favoured") >= np.log(20)).any(axis=1)
    ci = binomial_interval(int(crossed.sum()), 400)
    assert ci.low <= 0.05, crossed.mean()


def test_rejects_a_paper_sized_bias_early():
    ev = simulate_evaluations(100, k=10, n_perms=20, p_bias=0.2, rng=1)
    res = sequential_uniformity_test(ev.position, k=10, alpha=0.05)
    assert res.reject and res.stopped_at < 400
    assert res.e_value >= 20 and res.pvalue <= 0.05
    assert res.counts.sum() == res.stopped_at
    d = res.to_dict()
    assert d["threshold"] == pytest.approx(20) and len(d["log_e_path"]) == res.stopped_at


def test_null_sample_usually_does_not_reject_and_checkpoints_are_respected():
    ev = simulate_evaluations(50, k=5, n_perms=20, p_bias=0.0, rng=2)
    res = sequential_uniformity_test(ev.position, k=5, checkpoints=[100, 500, 1000])
    assert res.checkpoints.tolist() == [100, 500, 1000][: res.checkpoints.size]
    if not res.reject:
        assert res.stopped_at == 1000 and res.pvalue > 0.05


def test_confidence_sequences_cover_jointly():
    rng = np.random.default_rng(5)
    q = np.array([0.4, 0.3, 0.2, 0.1])
    misses = 0
    for _ in range(200):
        pos = rng.choice(4, size=500, p=q)
        counts = np.cumsum(np.eye(4, dtype=int)[pos], axis=0)[::25]
        low, high = position_confidence_sequences(counts, alpha=0.1)
        misses += not np.all((low <= q) & (q <= high))
    assert misses / 200 <= 0.1


def test_beta_cs_against_a_grid():
    from scipy import special

    s, t, level = 30.0, 200.0, np.log(5 / 0.05)
    grid = np.linspace(1e-6, 1 - 1e-6, 200001)
    log_m = (special.betaln(0.5 + s, 0.5 + t - s) - special.betaln(0.5, 0.5)
             - s * np.log(grid) - (t - s) * np.log1p(-grid))
    inside = grid[log_m < level]
    lo, hi = _beta_cs(s, t, level)
    assert lo == pytest.approx(inside.min(), abs=1e-5)
    assert hi == pytest.approx(inside.max(), abs=1e-5)


@pytest.mark.parametrize(("kwargs", "msg"), [
    ({"positions": [0, 1], "k": 1}, MSG_K.format(value=1)),
    ({"positions": [0, 5], "k": 5}, MSG_POSITIONS.split(";")[0]),
    ({"positions": [0.5], "k": 5}, MSG_POSITIONS.split(";")[0]),
    ({"positions": [0, 1], "k": 5, "method": "x"}, MSG_METHOD.split("{")[0]),
    ({"positions": [0, 1], "k": 5, "checkpoints": [2, 1]}, MSG_CHECKPOINTS.split("{")[0]),
])
def test_input_validation(kwargs, msg):
    with pytest.raises(InputError, match=re.escape(msg)):
        sequential_uniformity_test(**kwargs)


def _favoured_reference(pos, k, shrink=50.0, cap=0.6):
    """The plug-in e-process written out, one evaluation at a time."""
    counts, log_e, out = [0] * k, 0.0, []
    for t, p in enumerate(pos):
        if t:
            best = max(range(k), key=lambda q: (counts[q], -q))
            b = min(max((counts[best] - t / k) / (t * (1 - 1 / k) + shrink), 0.0), cap)
            log_e += np.log(1 + b * (k - 1)) if p == best else np.log(1 - b)
        counts[p] += 1
        out.append(log_e)
    return np.array(out)


def test_favoured_kernel_against_python_reference():
    rng = np.random.default_rng(8)
    pos = np.where(rng.random((3, 400)) < 0.15, 2, rng.integers(0, 6, (3, 400)))
    got = log_e_values(pos, 6, method="favoured")
    for r in range(3):
        np.testing.assert_allclose(got[r], _favoured_reference(pos[r].tolist(), 6))
