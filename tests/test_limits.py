"""The option bounds (``recaudit._limits``): the largest value named in a refusal is
the largest that fits, and every bound uses the one measure of available memory."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recaudit import _limits as L
from recaudit.exceptions import ConfigError, InputError
from recaudit.positional import AnalysisOptions, power_study
from recaudit.positional._simulation import MSG_ICM_CANNOT_REJECT


@settings(max_examples=50, deadline=None)
@given(per=st.integers(1, 10**6), fixed=st.integers(0, 10**6), budget=st.integers(1, 10**9),
       value=st.integers(1, 10**12))
def test_largest_within_against_the_closed_form(per, fixed, budget, value) -> None:
    """For a linear cost the largest value that fits is floor((budget - fixed) / per)."""
    got = L.largest_within(lambda v: fixed + per * v, budget, value)
    expected = max(0, min(value, (budget - fixed) // per))
    assert got == expected


def test_the_refusal_names_the_setting_and_the_largest_value(monkeypatch) -> None:
    monkeypatch.setenv("RECAUDIT_MEMORY_BYTES", str(8 * 1000))
    with pytest.raises(InputError) as info:
        L.require_memory("`--n-boot` (n_boot)", 10**6, lambda b: 8 * b, what="x")
    text = str(info.value)
    assert text.startswith("`--n-boot` (n_boot) = 1,000,000 needs about")
    assert "the largest value it can do is 1,000" in text
    assert L.require_memory("s", 1000, lambda b: 8 * b, what="x") == 1000  # it fits
    with pytest.raises(ConfigError, match="even the smallest value"):
        L.require_memory("s", 5, lambda b: 10**6 * b, what="x", error=ConfigError)


def test_available_memory_override(monkeypatch) -> None:
    monkeypatch.setenv("RECAUDIT_MEMORY_BYTES", "12345")
    assert L.available_memory() == 12345
    monkeypatch.setenv("RECAUDIT_MEMORY_BYTES", "lots")
    with pytest.raises(InputError, match="RECAUDIT_MEMORY_BYTES must be a number"):
        L.available_memory()
    monkeypatch.delenv("RECAUDIT_MEMORY_BYTES")
    measured = L.available_memory()
    assert measured is None or measured > 0


def test_time_bound(monkeypatch) -> None:
    steps = L.MAX_SECONDS * L.STEPS_PER_SECOND
    assert L.require_time("`--reps`", 10, lambda r: r * 1000, what="x") == 10
    with pytest.raises(InputError, match=r"`--reps` = .* would run for at least .* years"):
        L.require_time("`--reps`", 10**15, lambda r: r * 1000, what="x")
    largest = L.largest_within(lambda r: r * 1000, steps, 10**15)
    assert largest * 1000 <= steps < (largest + 1) * 1000


def test_jointly_names_the_setting_furthest_beyond(monkeypatch) -> None:
    monkeypatch.setenv("RECAUDIT_MEMORY_BYTES", str(10**6))
    a, b = 10, 10**9  # a * b * 8 bytes: b is the culprit
    with pytest.raises(InputError, match=r"^`b` = 1,000,000,000 needs"):
        L.require_memory_jointly([("`a`", a, lambda v: 8 * v * b),
                                  ("`b`", b, lambda v: 8 * a * v)], what="x")


def test_options_are_bounded_on_construction(monkeypatch) -> None:
    monkeypatch.setenv("RECAUDIT_MEMORY_BYTES", str(2**30))
    for field in ("n_resamples", "n_boot", "spb_repeats"):
        with pytest.raises(InputError, match=rf"\({field}\) = 10,000,000,000,000"):
            AnalysisOptions(**{field: 10**13})
    assert AnalysisOptions(n_resamples=10**6).n_resamples == 10**6


def test_simulation_refuses_resamples_that_cannot_reject() -> None:
    """With B shuffles the smallest +1-corrected p is 1/(1+B): B < 1/alpha - 1 makes
    every rejection rate 0 (the old ``--n-resamples 0`` reported exactly that)."""
    kw = dict(k=[3], queries=[5], perms=3, p_bias=[0.0], reps=2, rng=0)
    for b, alpha, need in ((0, 0.05, 19), (18, 0.05, 19), (98, 0.01, 99)):
        with pytest.raises(InputError, match=re.escape(MSG_ICM_CANNOT_REJECT.format(
                value=b, pmin=1 / (1 + b), alpha=alpha, need=need))):
            power_study(**kw, alpha=alpha, n_resamples=b)  # type: ignore[arg-type]
    rows = power_study(**kw, n_resamples=19).rows  # type: ignore[arg-type]
    assert len(rows) == 2
    rows = power_study(**kw, n_resamples=0, tests=["pob_unbp"]).rows  # type: ignore[arg-type]
    assert [r.test for r in rows] == ["pob_unbp"]


def test_orders_per_query() -> None:
    assert L.orders_per_query("sampled", 5, 20) == 20
    assert L.orders_per_query("exhaustive", 4, None) == 24
    assert L.orders_per_query("cyclic", 6, None) == 12


def test_a_config_that_would_run_for_years_is_refused(tmp_path) -> None:
    from helpers import write_config
    from recaudit.audit import load_audit_config

    slow = """\
[[models]]
name = "gpt"
backend = "openai"
base_url = "https://api.example.com/v1"
rate_limit_per_s = 1e-9
"""
    path = write_config(tmp_path, cache_dir=tmp_path / "cache", models=slow)
    with pytest.raises(ConfigError, match=r"`models.gpt.rate_limit_per_s` = 1e-09 requests "
                                          r"a second makes the run last at least"):
        load_audit_config(path)
    path = write_config(tmp_path, cache_dir=tmp_path / "cache", delay_s=1e12)
    with pytest.raises(ConfigError, match=r"delay_s` = 1e\+12 s makes the run last"):
        load_audit_config(path)
    assert load_audit_config(write_config(tmp_path, cache_dir=tmp_path / "cache", delay_s=0.5))
