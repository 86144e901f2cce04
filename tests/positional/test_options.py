"""AnalysisOptions: one typed object, validated once, the same in every mode."""

from __future__ import annotations

import dataclasses

import pytest

from recaudit.exceptions import InputError
from recaudit.positional import AnalysisOptions, analyze, simulate_evaluations


@pytest.mark.parametrize(("field", "value"), [
    ("alpha", 0.0), ("alpha", 1.0), ("alpha", "0.05"), ("alpha", float("nan")),
    ("epsilon", -0.1), ("epsilon", 1.0), ("epsilon", True),
    ("tau", 0.0), ("tau", 1.5), ("tau", "0.8"),
    ("spb_repeats", 0), ("spb_repeats", 2.0),
    ("n_resamples", 0), ("n_resamples", True),
    ("n_boot", 0), ("confidence_level", 1.0),
])
def test_a_bad_option_is_refused_by_name(field: str, value: object) -> None:
    name = "n_repeats" if field == "spb_repeats" else field
    with pytest.raises(InputError, match=name):
        AnalysisOptions(**{field: value})


def test_values_are_normalised_and_frozen() -> None:
    import numpy as np

    opts = AnalysisOptions(alpha=np.float32(0.1), n_boot=np.int64(30), tau=1)
    assert type(opts.alpha) is float and type(opts.n_boot) is int and opts.tau == 1.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.alpha = 0.2  # type: ignore[misc]
    assert set(opts.to_dict()) == {f.name for f in dataclasses.fields(AnalysisOptions)}


def test_the_default_object_is_the_default_analysis() -> None:
    ev = simulate_evaluations(12, k=4, n_perms=6, p_bias=0.2, rng=1)
    fast = AnalysisOptions(n_resamples=19, n_boot=20)
    a = analyze(ev, fast, rng=5).to_dict()
    b = analyze(ev, AnalysisOptions(**fast.to_dict()), rng=5).to_dict()
    assert a == b
    assert a["alpha"] == 0.05 and a["tau"] == "auto"
    stricter = analyze(ev, AnalysisOptions(alpha=0.01, n_resamples=19, n_boot=20), rng=5)
    assert stricter.alpha == 0.01
