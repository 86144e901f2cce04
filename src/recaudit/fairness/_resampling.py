"""The resampling behind :func:`~recaudit.fairness.evaluate`'s CIs and p-values.

- :func:`_bootstrap`: a user-level bootstrap stratified by group; each resample is
  a multinomial weight vector over users, so every statistic of a chunk of
  resamples comes from matrix products;
- :func:`_permutation_pvalues`: the protected labels shuffled over users, a
  +1-corrected Monte-Carlo p-value of the group gap per metric and cut-off.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from .._limits import N_BOOT, N_RESAMPLES, check_replicates
from .._stats import bootstrap_weights, monte_carlo_pvalue
from ._exposure import _coverage_replicates
from ._inputs import _Inputs
from ._interbias import inter_bias, normalized_relative_difference, relative_difference
from ._metrics import TopNLists
from .popularity._result import _PopularityReplicates


def _bootstrap(
    x: npt.NDArray[np.float64],
    lists: TopNLists,
    members: list[npt.NDArray[np.intp]],
    is_protected: npt.NDArray[np.bool_],
    ns: tuple[int, ...],
    cut_of_key: npt.NDArray[np.intp],
    ic: npt.NDArray[np.float64],
    inp: _Inputs,
    popularity: _PopularityReplicates | None = None,
) -> dict[str, npt.NDArray[np.float64]] | None:
    """Replicates of every statistic under a user bootstrap stratified by group.

    Group sizes are fixed by the stratification, so a group mean of a resample is
    ``w[:, g] @ x[g] / n_g`` -- one matrix product per group and chunk of resamples.
    IC is recomputed on each resample's lists only with ``resample_coverage``;
    otherwise it is held at its observed value ``ic`` (and has no replicates).
    With ``popularity``, the popularity-bias metrics of the same resamples are added
    (``pop_overall``, ``pop_groups``, ``pop_profile``, ``pop_user_groups``: its
    ``replicate_names``); no extra random draws, so every other
    replicate is the same with or without them.
    """
    if inp.options.n_boot == 0:
        return None
    strata = np.empty(x.shape[0], dtype=np.intp)
    for g, idx in enumerate(members):
        strata[idx] = g
    sizes = np.array([idx.size for idx in members], dtype=np.float64)
    prot = np.array([bool(is_protected[idx[0]]) for idx in members])
    names = ["groups", "overall", "ic"]
    if popularity is not None:
        names += popularity.replicate_names
    check_replicates(N_BOOT, inp.options.n_boot,
                     per_replicate=(len(members) + 4) * x.shape[1] + len(ns),
                     what="the bootstrap replicates of every group and metric")
    chunks: dict[str, list[npt.NDArray[np.float64]]] = {k: [] for k in names}
    for w in bootstrap_weights(x.shape[0], inp.options.n_boot, inp.rng, strata=strata):
        wf = w.astype(np.float64)
        sums = np.stack([wf[:, idx] @ x[idx] for idx in members], axis=1)  # b x G x K
        chunks["groups"].append(sums / sizes[None, :, None])
        chunks["overall"].append(sums.sum(axis=1) / sizes.sum())
        if inp.options.resample_coverage:
            chunks["ic"].append(_coverage_replicates(lists.items, inp.n_items, ns, w))
        else:
            chunks["ic"].append(np.full((w.shape[0], len(ns)), np.nan))
        if popularity is not None:
            for name, reps in popularity.chunk(wf).items():
                chunks[name].append(reps)
    out = {k: np.concatenate(v) for k, v in chunks.items()}
    coverage = out["ic"] if inp.options.resample_coverage else np.broadcast_to(ic, out["ic"].shape)
    all_sums = out["groups"] * sizes[None, :, None]
    pg = all_sums[:, prot].sum(axis=1) / sizes[prot].sum()
    ug = all_sums[:, ~prot].sum(axis=1) / sizes[~prot].sum()
    out["rd"] = relative_difference(ug, pg)
    out["nrd"] = normalized_relative_difference(out["rd"])
    out["ib"] = inter_bias(out["nrd"], coverage[:, cut_of_key])
    return out


def _permutation_pvalues(
    x: npt.NDArray[np.float64], is_protected: npt.NDArray[np.bool_], inp: _Inputs
) -> npt.NDArray[np.float64]:
    """Two-sided permutation p-value of ``|mean_UG - mean_PG|`` for every column.

    Under the null of exchangeable protected labels, shuffling them over users leaves
    the group sizes fixed; a shuffle's protected sum is ``P @ x`` with ``P`` the
    shuffled 0/1 label rows, so a chunk of shuffles is one matrix product.
    """
    k = x.shape[1]
    if inp.options.n_resamples == 0:
        return np.full(k, np.nan)
    n_users = x.shape[0]
    n_pg = int(is_protected.sum())
    n_ug = n_users - n_pg
    total = x.sum(axis=0)
    observed = np.abs(x[~is_protected].mean(axis=0) - x[is_protected].mean(axis=0))
    check_replicates(N_RESAMPLES, inp.options.n_resamples, per_replicate=k,
                     what="the permutation null of every metric")
    chunk = max(1, min(inp.options.n_resamples, 4_000_000 // max(n_users, 1)))
    null = []
    done = 0
    labels = is_protected.astype(np.float64)
    while done < inp.options.n_resamples:
        b = min(chunk, inp.options.n_resamples - done)
        p = inp.rng.permuted(np.tile(labels, (b, 1)), axis=1)
        s_pg = p @ x
        null.append(np.abs((total - s_pg) / n_ug - s_pg / n_pg))
        done += b
    t = np.concatenate(null)
    return np.array([monte_carlo_pvalue(float(observed[j]), t[:, j]) for j in range(k)])
