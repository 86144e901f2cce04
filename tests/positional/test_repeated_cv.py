"""Repeated cross-validation of sPB: single-split equivalence, the fold lottery, a hand case."""

from __future__ import annotations

import re

import numpy as np
import numpy.typing as npt
import pytest

from recaudit import InputError
from recaudit.positional import (
    Evaluations,
    instance_spb,
    simulate_evaluations,
    strong_positional_bias,
)
from recaudit.positional import _metrics as M


def _loop_reference(
    evals: Evaluations, tau: float, n_folds: int, n_repeats: int, seed: int
) -> npt.NDArray[np.float64]:
    """Repeated k-fold CV written query by query, fold by fold, repeat by repeat.

    Same stream as the library: one ``(n_repeats, n_evaluations)`` block of random
    keys; within a query the evaluation with the r-th smallest key goes to fold
    ``r % min(n_folds, l_j)``.
    """
    gen = np.random.default_rng(seed)
    keys = gen.random((n_repeats, evals.query.size))
    out = np.zeros(evals.n_queries)
    for j in range(evals.n_queries):
        idx = np.flatnonzero(evals.query == j)
        n_f = min(n_folds, idx.size)
        total = 0.0
        for a in range(n_repeats):
            rank = np.argsort(np.argsort(keys[a, idx], kind="stable"), kind="stable")
            fold = rank % n_f
            for f in range(n_f):
                train = np.bincount(evals.item[idx[fold != f]], minlength=evals.k)
                members: list[int] = []
                for i in sorted(range(evals.k), key=lambda i: (-train[i], i)):
                    members.append(i)
                    if train[members].sum() >= tau * train.sum() - 1e-9:
                        break
                total += np.isin(evals.item[idx[fold == f]], members, invert=True).sum()
        out[j] = total / n_repeats / idx.size
    return out


@pytest.mark.parametrize("n_repeats", [1, 3])
@pytest.mark.parametrize("seed", [0, 5])
def test_against_loop_reference(n_repeats: int, seed: int) -> None:
    ev = simulate_evaluations(15, k=4, n_perms=7, p_bias=0.3, rng=seed)
    ours = instance_spb(ev, tau=0.7, n_repeats=n_repeats, rng=seed + 100)
    ref = _loop_reference(ev, 0.7, 5, n_repeats, seed + 100)
    np.testing.assert_allclose(ours.spb, ref, rtol=0, atol=1e-12)
    assert ours.n_repeats == n_repeats and ours.n_folds == 5


def test_one_repeat_reproduces_the_single_split_numbers() -> None:
    # Pinned from the single-split implementation (commit 62b1a71, before repeats).
    ev = simulate_evaluations(60, k=5, p_bias=0.3, rng=0)
    res = strong_positional_bias(ev, rng=0, n_repeats=1)
    assert res.value == pytest.approx(0.11333333333333334, abs=1e-15)
    assert res.ci.low == pytest.approx(0.09833333333333334, abs=1e-15)
    assert res.ci.high == pytest.approx(0.12833333333333333, abs=1e-15)
    assert res.n_repeats == 1
    ev = simulate_evaluations(60, k=5, p_bias=0.3, rng=3)
    assert strong_positional_bias(ev, rng=3, n_repeats=1).value == pytest.approx(
        0.10916666666666666, abs=1e-15
    )


def test_fold_lottery_spread_shrinks_like_one_over_sqrt_repeats() -> None:
    ev = simulate_evaluations(40, k=5, n_perms=10, p_bias=0.3, rng=11)
    sd = {}
    for reps in (1, 20):
        values = [instance_spb(ev, tau=0.8, n_repeats=reps, rng=s).spb.mean()
                  for s in range(30)]
        sd[reps] = float(np.std(values, ddof=1))
    assert sd[1] > 0.003  # the lottery is real on this table
    # 1/sqrt(20) = 0.22; allow sampling error of an SD from 30 seeds
    assert sd[20] < 0.4 * sd[1]


def _table(items: list[list[int]], k: int) -> Evaluations:
    query = np.repeat(np.arange(len(items)), [len(x) for x in items])
    item = np.concatenate([np.asarray(x) for x in items])
    orders = np.tile(np.arange(k), (item.size, 1))
    ids = np.asarray([f"q{j}" for j in range(len(items))], dtype=object)
    return Evaluations(k, ids, query, orders, item.copy(), item, np.arange(item.size))


def test_hand_computed_two_fold_expectation() -> None:
    # One query, items (0, 0, 1, 1), 2 folds, tau = 0.5. Of the 3 equally likely
    # pairings, {00 | 11} puts every held-out selection outside the set built from the
    # other fold (sPB_j = 1); the 2 mixed ones tie 1-1 in training, the tie goes to item
    # 0 (retrieval rank), so 1 of 2 held out is outside per fold (sPB_j = 1/2).
    # Expected over fold assignments: 1/3 * 1 + 2/3 * 1/2 = 2/3.
    ev = _table([[0, 0, 1, 1]], k=3)
    singles = {float(instance_spb(ev, tau=0.5, n_folds=2, n_repeats=1, rng=s).spb[0])
               for s in range(40)}
    assert singles == {0.5, 1.0}
    many = instance_spb(ev, tau=0.5, n_folds=2, n_repeats=4000, rng=0).spb[0]
    assert many == pytest.approx(2 / 3, abs=0.02)  # Monte-Carlo SD 0.0037


def test_leave_one_out_does_not_depend_on_the_assignment() -> None:
    # Items (0, 0, 0, 1), 4 evaluations -> 4 folds (leave one out): only the held-out 1
    # is outside (training {0: 3} -> R = {0}); every 0 is inside. sPB_j = 1/4 always.
    ev = _table([[0, 0, 0, 1], [2, 2]], k=3)
    for reps in (1, 7):
        spb = instance_spb(ev, tau=0.5, n_repeats=reps, rng=reps).spb
        np.testing.assert_allclose(spb, [0.25, 0.0])


@pytest.mark.parametrize("bad", [0, -1, 2.5, True, "5"])
def test_n_repeats_is_validated(bad: object) -> None:
    ev = simulate_evaluations(5, k=3, n_perms=4, rng=0)
    message = re.escape(M.MSG_REPEATS.format(value=bad))
    with pytest.raises(InputError, match=message):
        strong_positional_bias(ev, n_repeats=bad)  # type: ignore[arg-type]
    with pytest.raises(InputError, match=message):
        instance_spb(ev, n_repeats=bad)  # type: ignore[arg-type]


def test_result_records_folds_and_repeats() -> None:
    ev = simulate_evaluations(10, k=3, n_perms=4, rng=0)
    res = strong_positional_bias(ev, n_boot=20, rng=0)
    assert res.n_repeats == M.SPB_REPEATS and res.n_folds == 5
    assert res.to_dict()["n_repeats"] == M.SPB_REPEATS and res.to_dict()["n_folds"] == 5
    # the mean of the per-instance values is the cell value (same stream, same R)
    inst = instance_spb(ev, n_repeats=4, rng=3)
    assert strong_positional_bias(ev, n_repeats=4, n_boot=20, rng=3).value == pytest.approx(
        inst.spb.mean()
    )


def test_cli_analyze_passes_and_validates_spb_repeats(tmp_path) -> None:
    import json

    from typer.testing import CliRunner

    from recaudit.cli import app

    path = tmp_path / "evals.csv"
    simulate_evaluations(20, k=4, n_perms=6, p_bias=0.3, rng=1).to_frame().to_csv(path)
    runner = CliRunner()
    fast = ["--n-resamples", "19", "--n-boot", "20", "--seed", "1", "--json"]
    res = runner.invoke(app, ["positional", "analyze", str(path), *fast, "--spb-repeats", "3"])
    assert res.exit_code == 0, res.output
    spb = json.loads(res.stdout)["spb_paper"]
    assert spb["n_repeats"] == 3 and spb["n_folds"] == 5
    default = runner.invoke(app, ["positional", "analyze", str(path), *fast])
    assert json.loads(default.stdout)["spb_paper"]["n_repeats"] == M.SPB_REPEATS
    for bad in ("0", "-2"):
        out = runner.invoke(app, ["positional", "analyze", str(path), "--spb-repeats", bad])
        assert out.exit_code == 2
        assert "`--spb-repeats` must be an integer >= 1" in out.output, out.output


def test_cli_help_states_the_library_default() -> None:
    from typer.testing import CliRunner

    from recaudit.cli import app
    from recaudit.cli._analysis_options import SPB_REPEATS_DEFAULT

    assert SPB_REPEATS_DEFAULT == str(M.SPB_REPEATS)
    for command in ("analyze", "run", "study"):
        res = CliRunner().invoke(app, ["positional", command, "--help"], env={"COLUMNS": "200"})
        assert res.exit_code == 0
        assert "--spb-repeats" in res.output, command
        assert f"[default: ({M.SPB_REPEATS})]" in res.output, command
