"""One noise-floor rule: identity-order groups borrow the permuted group's sPB p-hat."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from recaudit import InputError
from recaudit.positional import (
    AnalysisOptions,
    analyze_groups,
    simulate_evaluations,
    strong_positional_bias,
)
from recaudit.positional._analyze import REASON_NO_P_HAT
from recaudit.positional._metrics import MSG_P_HAT_FIXED_TAU, spb_thresholds

FAST = {"n_resamples": 99, "n_boot": 50}


def _study_like(seed: int = 0) -> pd.DataFrame:
    """permutation (biased), decoding and labels (identity order), two temperatures."""
    parts = []
    for t, s in ((0.0, seed), (0.6, seed + 10)):
        perm = simulate_evaluations(15, k=5, n_perms=8, p_bias=0.4, rng=s).to_frame()
        parts.append(perm.assign(condition="permutation", temperature=t, model="m"))
        for cond, s2 in (("decoding", s + 1), ("labels", s + 2)):
            ident = simulate_evaluations(15, k=5, n_perms=8, p_bias=0.4, rng=s2).to_frame()
            ident["order"] = "1 2 3 4 5"  # identity order on every evaluation
            parts.append(ident.assign(condition=cond, temperature=t, model="m"))
    return pd.concat(parts, ignore_index=True)


def test_identity_groups_use_the_permuted_groups_p_hat() -> None:
    grouped = analyze_groups(_study_like(), AnalysisOptions(**FAST),
                                         by=["model", "temperature", "condition"], rng=1)
    by_key = {(g.group["temperature"], g.group["condition"]): g for g in grouped.groups}
    for t in (0.0, 0.6):
        perm = by_key[(t, "permutation")]
        assert perm.spb_paper is not None and perm.spb_threshold_from is None
        for cond in ("decoding", "labels"):
            g = by_key[(t, cond)]
            assert g.spb_paper is not None and g.spb_paper.p_hat == perm.spb_paper.p_hat
            assert g.spb_threshold_from == {"model": "m", "temperature": t,
                                            "condition": "permutation"}
            d = g.to_dict()
            assert d["spb_paper"]["threshold_from"]["condition"] == "permutation"
            assert d["tau"] == "auto"


def test_identity_p_hat_differs_from_the_own_rule() -> None:
    # without `condition` in `by` nothing is borrowed: own p-hat (the old, misleading rule)
    table = _study_like()
    ident = table[(table["condition"] == "decoding") & (table["temperature"] == 0.6)]
    own = analyze_groups(ident, AnalysisOptions(**FAST), by=["model"], rng=1).groups[0]
    grouped = analyze_groups(table, AnalysisOptions(**FAST),
                             by=["model", "temperature", "condition"], rng=1)
    borrowed = next(g for g in grouped.groups if g.group["condition"] == "decoding"
                    and g.group["temperature"] == 0.6)
    assert own.spb_paper is not None and borrowed.spb_paper is not None
    assert own.spb_threshold_from is None and own.spb_paper.p_hat != borrowed.spb_paper.p_hat


def test_identity_group_without_a_permuted_group_has_no_spb_and_says_why() -> None:
    table = _study_like()
    only = table[table["condition"] != "permutation"]
    grouped = analyze_groups(only, AnalysisOptions(**FAST),
                             by=["model", "temperature", "condition"], rng=1)
    for g in grouped.groups:
        assert g.spb_paper is None
        assert g.coverage["spb_paper"].reason == REASON_NO_P_HAT.format(
            where="model, temperature")
        assert g.to_dict()["spb_paper"]["value"] is None
    # a fixed tau needs no p-hat
    fixed = analyze_groups(only, AnalysisOptions(tau=0.8, **FAST),
                           by=["model", "temperature", "condition"], rng=1)
    assert all(g.spb_paper is not None and g.spb_paper.tau == 0.8 for g in fixed.groups)
    assert all(g.to_dict()["tau"] == 0.8 for g in fixed.groups)


def test_grouped_streams_do_not_depend_on_the_borrowing_order() -> None:
    # a permuted group's numbers are the same whether or not identity groups come along
    table = _study_like()
    full = analyze_groups(table, AnalysisOptions(**FAST),
                          by=["model", "temperature", "condition"], rng=4)
    perm = next(g for g in full.groups if g.group["condition"] == "permutation"
                and g.group["temperature"] == 0.6)
    # groups are sorted: decoding, labels, permutation at each T; keep the same positions
    # by relabelling (same spawn order, different condition names)
    relabel = table.assign(condition=table["condition"].replace(
        {"decoding": "d", "labels": "l"}))
    other = analyze_groups(relabel, AnalysisOptions(**FAST),
                           by=["model", "temperature", "condition"], rng=4)
    perm2 = next(g for g in other.groups if g.group["condition"] == "permutation"
                 and g.group["temperature"] == 0.6)
    assert perm.spb_paper is not None and perm2.spb_paper is not None
    assert perm.spb_paper.value == perm2.spb_paper.value and perm.spb_paper.ci == perm2.spb_paper.ci
    assert perm.pb.value == perm2.pb.value


def test_strong_positional_bias_p_hat_argument(biased) -> None:
    res = strong_positional_bias(biased, p_hat=0.25, n_boot=50, rng=0)
    assert res.p_hat == 0.25 and res.tau is None
    np.testing.assert_allclose(spb_thresholds(5, None, 0.25), 1 - 0.25 * np.arange(4, -1, -1) / 5)
    # p_hat = 0: every threshold is 1, R_j = every item seen in the training folds, so
    # only never-seen items are outside
    zero = strong_positional_bias(biased, p_hat=0.0, n_boot=50, rng=0)
    one = strong_positional_bias(biased, p_hat=1.0, n_boot=50, rng=0)
    assert zero.value <= res.value <= one.value
    with pytest.raises(InputError, match="`p_hat` must be a number in"):
        strong_positional_bias(biased, p_hat=1.5)
    with pytest.raises(InputError, match=MSG_P_HAT_FIXED_TAU.split(":")[0]):
        strong_positional_bias(biased, tau=0.8, p_hat=0.2)
