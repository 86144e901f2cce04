"""The family's adjusted intervals: Bonferroni-simultaneous with Holm, Benjamini &
Yekutieli's false-coverage-rate level with BH, the row's own level without; each an
expanded percentile interval."""

from __future__ import annotations

import math

import numpy as np
import pytest

from recaudit._multiplicity import adjusted_level
from recaudit.positional import evaluations_from_table, simulate_evaluations
from recaudit.positional._compare import Comparison, compare_systems


def _systems(ps: list[float], seed: int = 0) -> dict[str, object]:
    gen = np.random.default_rng(seed)
    base = simulate_evaluations(60, k=4, p_bias=0.0, rng=gen).to_frame()
    out = {}
    for i, p in enumerate(ps):
        f = base.copy()
        first = gen.random(len(f)) < p
        f["selected_position"] = np.where(first, 1, gen.integers(1, 5, len(f)))
        out[f"s{i}"] = evaluations_from_table(f)
    return out


@pytest.mark.parametrize("adjust", ["holm", "bh", "none"])
def test_adjusted_intervals_hold_the_family_level(adjust: str) -> None:
    rows = [r for r in compare_systems(_systems([0.0, 0.1, 0.6]), adjust=adjust,  # type: ignore[arg-type]
                                       n_boot=400, rng=1) if r.measure == "pb_plugin"]
    assert len(rows) == 3
    rejected = sum(r.pvalue_adjusted <= 0.05 for r in rows)
    expected = {"holm": 1 - 0.05 / 3, "bh": 1 - max(1, rejected) * 0.05 / 3,
                "none": 0.95}[adjust]
    for r in rows:
        assert r.adjusted_level == pytest.approx(expected)
        # the same or a higher level, expanded: never narrower than the row's own interval
        assert r.ci_low_adjusted <= r.ci_low <= r.difference <= r.ci_high \
            <= r.ci_high_adjusted


def test_the_level_rules() -> None:
    assert adjusted_level([0.01, 0.2, np.nan], "holm", 0.95) == pytest.approx(1 - 0.05 / 2)
    assert adjusted_level([0.01, 0.02, 0.3, 0.9], "bh", 0.95) == pytest.approx(1 - 2 * 0.05 / 4)
    assert adjusted_level([0.5, 0.9], "bh", 0.95) == pytest.approx(1 - 0.05 / 2)  # R >= 1
    assert adjusted_level([0.01], "holm", 0.9) == 0.9  # one comparison: nothing to adjust


def test_rows_written_before_the_adjusted_interval_read_back() -> None:
    (row,) = [r for r in compare_systems(_systems([0.0, 0.3]), n_boot=200, rng=2)
              if r.measure == "first"]
    old = {k: v for k, v in row.to_dict().items()
           if k not in ("ci_low_adjusted", "ci_high_adjusted", "adjusted_level")}
    back = Comparison.from_dict(old)
    assert math.isnan(back.ci_low_adjusted) and back.difference == row.difference
    assert Comparison.from_dict(row.to_dict()) == row


def test_the_expanded_level_matches_its_formula() -> None:
    from scipy import stats

    from recaudit._stats import expanded_level

    n, level = 100, 1 - 0.05 / 6
    t = stats.t.ppf(1 - (1 - level) / 2, n - 1)
    expected = 1 - 2 * stats.norm.sf(np.sqrt(n / (n - 1)) * t)
    assert expanded_level(level, n) == pytest.approx(expected)
    assert level < expanded_level(level, n) < expanded_level(level, 20)  # wider at small n
    assert expanded_level(0.95, 10**6) == pytest.approx(0.95, abs=1e-5)
    assert expanded_level(0.95, 1) == 0.95
