"""The positional study's analysis: every cell of the grid and the counterfactuals.

:func:`analyze_study` takes an evaluations table (model, k, temperature, condition,
...) and, optionally, the candidates with their retrieval scores, and computes, for
the full table and for the complete cases side by side:

- per cell (model, k, temperature, condition): POB-ICM, POB-UNBP (L and decision),
  PS, PB, sPB with query-level bootstrap CIs, and sPB's decoding-only noise floor;
- the counterfactual comparisons the grid allows (paired Wilcoxon on per-instance sPB,
  Holm across models, relevance-set IoU), each skipped with a recorded reason when
  the grid lacks a side;
- the retrieval-score dispersion regression of every cell (WLS, HC1, Holm across all
  slopes).

It reads files only (:func:`analyze_study_folder`; a run folder's seed:
:func:`run_seed`); running the LLM is :func:`recaudit.audit.run_positional_study`'s job.
Results: a :class:`~recaudit.positional.PositionalStudyResult` (``_study_file``): one
tidy table (a row per model, k, temperature, condition, analysis, metric), the typed
comparisons, regressions and skips, and ``study.json``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .._read import read_json
from .._read import read_table as read_file
from .._stats import Estimate, as_generator, holm
from ..exceptions import InputError
from ._analyze import REASON_NO_P_HAT, Coverage, PositionalAnalysis, analyze_groups
from ._counterfactual import (
    InstanceSpb,
    complete_case,
    discarded_mask,
    dispersion_regression,
    instance_spb,
    paired_instances,
    paired_wilcoxon,
    relevance_iou,
    score_dispersion,
)
from ._evaluations import evaluations_from_table, group_table, read_table
from ._metrics import StrongBiasResult
from ._options import AnalysisOptions
from ._study_file import (
    STUDY_COLUMNS,
    PositionalStudyResult,
    StudyComparison,
    StudyDispersion,
    StudySettings,
    StudySkip,
)

__all__ = [
    "STUDY_COLUMNS",
    "PositionalStudyResult",
    "analyze_study",
    "analyze_study_folder",
    "run_seed",
]

CELL = ("model", "k", "temperature", "condition")
#: (name, condition a, condition b, temperature of b: "same" or 0.0); a - b is tested.
COMPARISONS: tuple[tuple[str, str, str, str | float], ...] = (
    ("both_vs_decoding", "permutation", "decoding", "same"),
    ("both_vs_permutation_only", "permutation", "permutation", 0.0),
    ("labels_vs_permutation", "labels", "permutation", "same"),
    ("labels_permutation_vs_permutation", "labels_permutation", "permutation", "same"),
)
COMPARISON_TEXT = {
    "both_vs_decoding": "permutations + sampling (both) vs decoding-only (identity order)",
    "both_vs_permutation_only": "permutations + sampling (T > 0) vs permutations at T = 0",
    "labels_vs_permutation": "random labels, identity order vs positional ids, random orders",
    "labels_permutation_vs_permutation": "random labels + random orders vs random orders",
}
REASON_DEGENERATE = (
    "decoding-only at temperature 0 is degenerate (identity order, no sampling noise): "
    "nothing to test; the noise floor needs temperature > 0"
)
REASON_NO_DECODING = "no `decoding` condition in the grid: no noise floor"
REASON_NO_T0 = "no temperature 0 in the grid: no permutation-only reference"
REASON_NO_CELL = "the grid has no {cond} cell at T = {t:g}"
REASON_NO_CANDIDATES = "no candidates table with retrieval scores (candidates.parquet)"
MSG_STUDY_COLUMNS = (
    "the evaluations table lacks column(s) {cols}: the study groups by model, k, "
    "temperature and condition (a `recaudit positional run` folder has them)"
)
MSG_NO_EVALUATIONS = (
    "{path}: no evaluations.parquet; run `recaudit positional study CONFIG --out {path}` "
    "or `recaudit positional run CONFIG --out {path}` first"
)

Cell = tuple[str, int, float, str]
#: sPB's folds (the default of ``strong_positional_bias``, which the grouped analysis uses).
SPB_FOLDS = 5
#: A run folder's resolved config (written by ``recaudit.audit``; the seed read here).
RESOLVED_CONFIG = "config.resolved.json"


MSG_RUN_SEED = ("`seed` in {path} must be a whole number >= 0, got {value!r}: mend the file or "
                "pass a seed (`--seed S`)")


def run_seed(run_dir: str | Path) -> int | None:
    """The ``seed`` in a run folder's ``config.resolved.json``: the seed a folder's
    analyses repeat when none is given (``positional analyze RUN``,
    :func:`analyze_study_folder`).

    None without the file or without a ``seed`` key (analysed unseeded).

    Raises
    ------
    InputError
        The file exists but is not readable JSON, or its ``seed`` is not a whole number
        >= 0 (the message names the file and says to pass a seed): a broken file never
        silently changes the analysis's seed.
    """
    path = Path(run_dir) / RESOLVED_CONFIG
    if not path.is_file():
        return None
    doc = read_json(path, what="the run's resolved config")
    if not isinstance(doc, dict) or "seed" not in doc:
        return None
    seed = doc["seed"]
    if isinstance(seed, int) and not isinstance(seed, bool) and seed >= 0:
        return seed
    raise InputError(MSG_RUN_SEED.format(path=path, value=seed))


def analyze_study_folder(
    run_dir: str | Path,
    options: AnalysisOptions | None = None,
    *,
    rng: np.random.Generator | int | None = None,
    progress: Callable[[str], None] | None = None,
) -> PositionalStudyResult:
    """Analyse a finished run folder (``evaluations.parquet`` [+ ``candidates.parquet``]).

    Nothing is run; see :func:`analyze_study` for the analyses. The seed defaults to the
    run's (:func:`run_seed`) when ``rng`` is None.
    """
    folder = Path(run_dir)
    evaluations = folder / "evaluations.parquet"
    if not evaluations.is_file():
        raise InputError(MSG_NO_EVALUATIONS.format(path=folder))
    candidates_path = folder / "candidates.parquet"
    candidates = read_file(candidates_path, what="candidate sets") \
        if candidates_path.is_file() else None
    if rng is None:
        rng = run_seed(folder)
    return analyze_study(
        read_file(evaluations, what="evaluations table"),
        options,
        candidates=candidates,
        rng=rng,
        progress=progress,
    )


def analyze_study(
    table: pd.DataFrame | str | Path,
    options: AnalysisOptions | None = None,
    *,
    candidates: pd.DataFrame | None = None,
    rng: np.random.Generator | int | None = None,
    progress: Callable[[str], None] | None = None,
) -> PositionalStudyResult:
    r"""Analyse every cell of the study grid and the comparisons it allows.

    Per cell (model, k, temperature, condition): the grouped analysis of
    :func:`~recaudit.positional.analyze_groups` (POB-ICM, POB-UNBP with Holm across
    cells, PS, PB, sPB with bootstrap CIs) plus sPB's noise floor (the decoding-only
    cell at the same model, k and temperature). Identity-order cells (``decoding``,
    ``labels``) get their sPB with the relevance threshold of the permuted cell at the
    same model, k and temperature (their own PB measures relevance, not position).

    Comparisons (``a - b`` of per-instance sPB, paired by query; Wilcoxon signed-rank
    with zero differences excluded, Hodges-Lehmann effect, Holm across models within
    each comparison, k and temperature; mean relevance-set IoU with a bootstrap CI):
    ``both_vs_decoding`` (permutation vs decoding, same T > 0),
    ``both_vs_permutation_only`` (permutation at T > 0 vs T = 0),
    ``labels_vs_permutation`` and ``labels_permutation_vs_permutation`` (same T).

    Dispersion (when ``candidates`` with ``k``, ``query_id``, ``score`` is given): per
    cell, WLS of the % of valid evaluations outside the relevance set on the
    standardized SD of the candidates' retrieval scores, weights = valid evaluations,
    HC1 Wald test; Holm across every slope of the analysis.

    sPB (cells and per instance) averages its 5-fold cross-validation over
    ``spb_repeats`` random fold assignments (repeated CV, Kim 2009), recorded in
    ``settings`` as ``spb_n_folds``/``spb_n_repeats`` and per cell in ``analysis.json``.

    Everything is computed twice: ``analysis = "full"`` and ``"complete_case"``
    (queries without any discarded generation in their model and k).

    References
    ----------
    Wilcoxon (1945); White (1980); MacKinnon & White (1985); Holm, S. (1979). A simple
    sequentially rejective multiple test procedure. Scand. J. Statist. 6, 65-70.
    Kim, J.-H. (2009). Estimating classification error rate: Repeated cross-validation,
    repeated hold-out and bootstrap. Comput. Statist. Data Anal. 53(11), 3735-3745.
    Peláez-González, Herrera, Herrera-Poyatos, arXiv 2610.37962 (appendices).
    """
    data = _analyze_study_iv(table)
    opts = AnalysisOptions() if options is None else options
    gen = as_generator(rng)
    seed = rng if isinstance(rng, int) else None
    say = progress or (lambda _msg: None)
    cc = complete_case(data)
    rows: list[dict[str, Any]] = []
    comparisons: list[StudyComparison] = []
    dispersion: list[StudyDispersion] = []
    skipped: list[StudySkip] = []
    grouped_full: list[dict[str, Any]] = []
    # common random numbers: both analyses replay one stream (CV folds, bootstrap,
    # shuffles), so a complete-case table equal to the full one gives equal numbers and
    # any difference comes from the queries left out
    entropy = int(gen.integers(2**63))
    for name, part in (("full", data), ("complete_case", cc.table)):
        g = np.random.default_rng(np.random.SeedSequence(entropy))
        if len(part) == 0 or discarded_mask(part).all():
            skipped.append(StudySkip(analysis=name, what="everything",
                                     reason="no query without a discarded generation"))
            continue
        say(f"{name}: cells")
        run = _Analysis(name, part, candidates, opts, g)
        grouped = run.cells()
        if name == "full":
            grouped_full = grouped
        say(f"{name}: comparisons")
        run.compare()
        say(f"{name}: dispersion")
        run.regress()
        rows += run.rows
        comparisons += run.comparisons
        dispersion += run.dispersion
        skipped += run.skipped
    frame = pd.DataFrame(rows, columns=list(STUDY_COLUMNS))
    frame = frame.astype({"k": "int64", "temperature": "float64", "n_queries": "Int64",
                          "n_evaluations": "Int64"})
    settings = StudySettings(
        alpha=opts.alpha, epsilon=opts.epsilon, n_resamples=opts.n_resamples,
        n_boot=opts.n_boot, confidence_level=opts.confidence_level, tau=opts.tau,
        spb_n_folds=SPB_FOLDS, spb_n_repeats=opts.spb_repeats, seed=seed,
        n_queries_complete=cc.n_queries_kept, n_queries_with_discards=cc.n_queries_dropped,
        complete_case_by=tuple(cc.by))
    return PositionalStudyResult(
        table=frame,
        comparisons=tuple(comparisons),
        dispersion=tuple(dispersion),
        skipped=tuple(skipped),
        analysis=grouped_full,
        settings=settings,
    )


class _Analysis:
    """One analysis ("full" or "complete_case") of the grid."""

    def __init__(
        self,
        name: str,
        table: pd.DataFrame,
        candidates: pd.DataFrame | None,
        options: AnalysisOptions,
        gen: np.random.Generator,
    ) -> None:
        self.name = name
        self.table = table
        self.candidates = candidates
        self.options = options
        self.gen = gen
        self.rows: list[dict[str, Any]] = []
        self.comparisons: list[StudyComparison] = []
        self.dispersion: list[StudyDispersion] = []
        self.skipped: list[StudySkip] = []
        self.evals: dict[Cell, Any] = {}
        self.n_evaluations: dict[Cell, int] = {}
        self._instances: dict[Cell, InstanceSpb | str] = {}
        #: Each cell's sPB from the grouped analysis (or the reason it is missing).
        self.spb: dict[Cell, tuple[StrongBiasResult | None, Coverage,
                                   dict[str, Any] | None]] = {}

    # -- cells ---------------------------------------------------------------------
    def cells(self) -> list[dict[str, Any]]:
        usable = []
        for keys, part in group_table(self.table, list(CELL)):
            cell = _cell(keys)
            try:
                self.evals[cell] = evaluations_from_table(part)
            except InputError as exc:
                self._skip(cell, "cell", str(exc))
                continue
            usable.append(part)
        if not usable:
            return []
        grouped = analyze_groups(pd.concat(usable), self.options, by=list(CELL),
                                 rng=self.gen)
        as_list = grouped.to_list()
        icm_holm, unbp_holm = grouped.pob_icm_pvalue_holm, grouped.pob_unbp_pvalue_holm
        for i, res in enumerate(grouped.groups):
            self._cell_rows(res, float(icm_holm[i]), float(unbp_holm[i]))
        self._noise_floor_rows()
        return as_list

    def _cell_rows(self, res: PositionalAnalysis, icm_holm: float, unbp_holm: float) -> None:
        cell = _cell(res.group)
        n_q, n_e = res.n_queries, res.n_evaluations
        self.n_evaluations[cell] = n_e
        alpha = self.options.alpha
        icm, unbp = res.pob_icm, res.pob_unbp
        self._row(cell, "pob_icm", n_q, n_e,
                  estimate=None if icm is None else icm.statistic,
                  p_value=None if icm is None else icm.pvalue, p_holm=icm_holm,
                  decision=_decision(icm_holm, alpha) if icm is not None else "",
                  note=res.coverage["pob_icm"].reason
                  or (icm.caveat or f"X2 over {icm.n_columns} permutation columns, "
                      f"{icm.n_resamples} within-query shuffles" if icm else ""))
        self._row(cell, "pob_unbp_L", n_q, n_e,
                  estimate=None if unbp is None else unbp.L,
                  p_value=None if unbp is None else unbp.pvalue, p_holm=unbp_holm,
                  decision="" if unbp is None else
                  ("reject" if (unbp_holm <= alpha if math.isfinite(unbp_holm)
                                else unbp.reject) else "retain"),
                  note=res.coverage["pob_unbp"].reason
                  or f"L > epsilon = {res.epsilon:g} rejects")
        pb_est = Estimate(res.pb.value, res.pb.ci)
        for metric, est in (("ps", res.ps), ("ps_modal", res.ps_modal), ("pb", pb_est)):
            self._row(cell, metric, res.coverage[metric].n_queries, n_e, est=est,
                      note=res.coverage[metric].reason or "")
        split, cov = res.spb, res.coverage["spb"]
        fit_note = "" if split is None else (
            f"empirical Bayes, E|R| = {split.mean_set_size:.2f}, floor {split.floor:g}")
        for metric, est in (("spb", None if split is None else split.strong),
                            ("spb_soft", None if split is None else split.soft)):
            self._row(cell, metric, cov.n_queries if split else 0, n_e, est=est,
                      note=cov.reason or fit_note)
        # one rule: the grouped analysis scores identity-order cells against the
        # permuted cell's threshold (analysis.json shows the same numbers)
        self.spb[cell] = (res.spb_paper, res.coverage["spb_paper"], res.spb_threshold_from)
        self._spb_row(cell, "spb_paper", n_e, res.spb_paper, res.coverage["spb_paper"],
                      res.spb_threshold_from)

    def _spb_row(self, cell: tuple[Any, ...], metric: str, n_e: int,
                 spb: StrongBiasResult | None, cov: Coverage,
                 threshold_from: Mapping[str, Any] | None) -> None:
        if spb is None:
            note = cov.reason or ""
        elif spb.p_hat is None:
            note = f"fixed tau = {spb.tau:g}"
        elif threshold_from is not None:
            note = (f"threshold from the permuted cell ({threshold_from.get('condition')}, "
                    f"p_hat = {spb.p_hat:.3g})")
        else:
            note = f"auto rule, p_hat = {spb.p_hat:.3g}"
        if metric == "spb_noise_floor" and spb is not None:
            note = ("sPB of the decoding-only cell (same model, k, T), same relevance "
                    "threshold; " + note)
        self._row(cell, metric, cov.n_queries if spb is not None else 0, n_e,
                  est=None if spb is None else Estimate(spb.value, spb.ci), note=note)

    def _noise_floor_rows(self) -> None:
        for cell in sorted(self.evals, key=_sort_key):
            model, k, t, cond = cell
            if cond == "decoding":
                continue
            floor = (model, k, t, "decoding")
            if floor not in self.evals:
                continue
            n_e = self.n_evaluations.get(floor, 0)
            if t == 0:
                self._row(cell, "spb_noise_floor", 0, n_e, note=REASON_DEGENERATE)
                continue
            self._spb_row(cell, "spb_noise_floor", n_e, *self.spb[floor])

    # -- per-instance sPB --------------------------------------------------------------
    def instance(self, cell: Cell) -> InstanceSpb | str:
        """Per-instance sPB of a cell (cached), or the reason it is unavailable."""
        if cell not in self._instances:
            self._instances[cell] = self._instance(cell)
        return self._instances[cell]

    def _instance(self, cell: Cell) -> InstanceSpb | str:
        evals = self.evals[cell]
        p_hat: float | None = None
        if self.options.tau == "auto":
            # the p-hat the cell's sPB used (an identity-order cell's is the permuted
            # cell's), so comparisons and the cell table share one threshold
            no_p_hat = REASON_NO_P_HAT.format(where="model, k, temperature")
            spb, cov, _ = self.spb.get(cell, (None, Coverage(0, no_p_hat), None))
            if spb is None or spb.p_hat is None:
                return cov.reason or no_p_hat
            p_hat = spb.p_hat
        try:
            return instance_spb(evals, tau=self.options.tau, p_hat=p_hat, n_folds=SPB_FOLDS,
                                n_repeats=self.options.spb_repeats, rng=self.gen.spawn(1)[0])
        except InputError as exc:
            return str(exc)

    # -- comparisons --------------------------------------------------------------------
    def compare(self) -> None:
        models = sorted({c[0] for c in self.evals})
        ks = sorted({c[1] for c in self.evals})
        temps = sorted({c[2] for c in self.evals})
        conds = {c[3] for c in self.evals}
        start = len(self.comparisons)
        for name, ca, cb, tb in COMPARISONS:
            if ca not in conds and cb not in conds:
                continue
            for model in models:
                for k in ks:
                    for t in temps:
                        self._compare_one(name, model, k, t, ca, cb, tb, conds, temps)
        # Holm across models within each (comparison, k, temperature)
        mine = self.comparisons[start:]
        families: dict[tuple[Any, ...], list[int]] = {}
        for i, c in enumerate(mine):
            families.setdefault((c.comparison, c.k, c.temperature), []).append(i)
        for fam in families.values():
            for i, p in zip(fam, holm([mine[i].pvalue for i in fam]), strict=True):
                mine[i] = replace(mine[i], pvalue_holm=float(p))
        self.comparisons[start:] = mine
        alpha = self.options.alpha
        for c in mine:
            cell = (c.model, c.k, c.temperature, c.comparison)
            self._row(cell, "spb_difference", c.n_used, c.n_evaluations,
                      estimate=c.effect, ci_low=c.ci_low, ci_high=c.ci_high,
                      p_value=c.pvalue, p_holm=c.pvalue_holm,
                      decision=_decision(c.pvalue_holm, alpha),
                      note=(f"Wilcoxon signed-rank on sPB({c.condition_a}, "
                            f"T={c.temperature:g}) - sPB({c.condition_b}, "
                            f"T={c.temperature_b:g}); {c.n_pairs} pairs, "
                            f"{c.n_pairs - c.n_used} unchanged excluded; "
                            "estimate = Hodges-Lehmann shift; Holm across models"))
            self._row(cell, "relevance_iou", c.iou_n_queries, c.n_evaluations,
                      estimate=c.iou, ci_low=c.iou_ci_low, ci_high=c.iou_ci_high,
                      note="mean IoU of the per-query relevance sets of the two conditions")

    def _compare_one(self, name: str, model: str, k: int, t: float, ca: str, cb: str,
                     tb: str | float, conds: set[str], temps: list[float]) -> None:
        where: dict[str, Any] = {"analysis": self.name, "model": model, "k": k, "temperature": t}
        t_b = t if tb == "same" else float(tb)
        if name == "both_vs_permutation_only" and t == 0:
            return  # the reference itself
        a, b = (model, k, t, ca), (model, k, t_b, cb)
        reason = _design_reason(name, t, conds, temps) or next(
            (REASON_NO_CELL.format(cond=c[3], t=c[2]) for c in (a, b) if c not in self.evals),
            None)
        inst_a = inst_b = None
        if reason is None:
            inst_a, inst_b = self.instance(a), self.instance(b)
            reason = next((i for i in (inst_a, inst_b) if isinstance(i, str)), None)
        if reason is not None:
            self.skipped.append(StudySkip(**where, what=name, reason=reason))
            self._row((model, k, t, name), "spb_difference", 0, None, note=reason)
            return
        assert isinstance(inst_a, InstanceSpb) and isinstance(inst_b, InstanceSpb)
        ids, ra, rb = paired_instances(inst_a, inst_b)
        level = self.options.confidence_level
        test = paired_wilcoxon(inst_a.spb[ra], inst_b.spb[rb], confidence_level=level)
        iou = relevance_iou(inst_a, inst_b, n_boot=self.options.n_boot,
                            confidence_level=level, rng=self.gen.spawn(1)[0])
        self.comparisons.append(StudyComparison(
            **where, comparison=name, description=COMPARISON_TEXT[name], condition_a=ca,
            condition_b=cb, temperature_b=t_b, p_hat_a=inst_a.p_hat, p_hat_b=inst_b.p_hat,
            n_evaluations=int(inst_a.n_valid[ra].sum() + inst_b.n_valid[rb].sum()),
            **test.to_dict(), pvalue_holm=math.nan, iou=iou.mean.value,
            iou_ci_low=iou.mean.ci.low, iou_ci_high=iou.mean.ci.high,
            iou_n_queries=iou.n_queries))

    # -- dispersion ----------------------------------------------------------------------
    def regress(self) -> None:
        if self.candidates is None or not {"k", "query_id", "score"} <= set(
            self.candidates.columns
        ):
            self.skipped.append(StudySkip(analysis=self.name, what="dispersion",
                                          reason=REASON_NO_CANDIDATES))
            return
        start = len(self.dispersion)
        level = self.options.confidence_level
        for cell in sorted(self.evals, key=_sort_key):
            model, k, t, cond = cell
            where: dict[str, Any] = {"analysis": self.name, "model": model, "k": k,
                                     "temperature": t, "condition": cond}
            inst = self.instance(cell)
            reason = inst if isinstance(inst, str) else None
            if isinstance(inst, InstanceSpb):
                cands = self.candidates[self.candidates["k"] == k]
                disp = score_dispersion(cands)
                ids = [str(q) for q in inst.query_ids.tolist()]
                disp.index = disp.index.astype(str)
                s = disp.reindex(ids).to_numpy(dtype=float)
                ok = np.isfinite(s)
                try:
                    res = dispersion_regression(100.0 * inst.spb[ok], s[ok], inst.n_valid[ok],
                                                confidence_level=level)
                except InputError as exc:
                    reason = str(exc)
            if reason is not None:
                self.skipped.append(StudySkip(**where, what="dispersion", reason=reason))
                self._row(cell, "dispersion_slope", 0, None, note=reason)
                continue
            self.dispersion.append(StudyDispersion(**where, **res.to_dict(),
                                                   pvalue_holm=math.nan))
        mine = [replace(d, pvalue_holm=float(p)) for d, p in zip(
            self.dispersion[start:], holm([d.pvalue for d in self.dispersion[start:]]),
            strict=True)]
        self.dispersion[start:] = mine
        alpha = self.options.alpha
        for d in mine:
            cell = (d.model, d.k, d.temperature, d.condition)
            self._row(cell, "dispersion_slope", d.n_queries, int(d.sum_weights),
                      estimate=d.slope, ci_low=d.ci_low, ci_high=d.ci_high,
                      p_value=d.pvalue, p_holm=d.pvalue_holm,
                      decision=_decision(d.pvalue_holm, alpha),
                      note="pp outside the relevance set per SD of retrieval-score "
                      "dispersion; WLS (weights = valid evaluations), HC1 Wald, Holm "
                      "across all slopes")

    # -- rows ----------------------------------------------------------------------------
    def _row(self, cell: tuple[Any, ...], metric: str, n_queries: int | None,
             n_evaluations: int | None, *, est: Estimate | None = None,
             estimate: float | None = None, ci_low: float | None = None,
             ci_high: float | None = None, p_value: float | None = None,
             p_holm: float | None = None, decision: str = "", note: str = "") -> None:
        if est is not None:
            estimate, ci_low, ci_high = est.value, est.ci.low, est.ci.high
        self.rows.append({
            "model": cell[0], "k": int(cell[1]), "temperature": float(cell[2]),
            "condition": cell[3], "analysis": self.name, "metric": metric,
            "estimate": _num(estimate), "ci_low": _num(ci_low), "ci_high": _num(ci_high),
            "p_value": _num(p_value), "p_holm": _num(p_holm), "decision": decision,
            "n_queries": n_queries, "n_evaluations": n_evaluations, "note": note,
        })

    def _skip(self, cell: Cell, what: str, reason: str) -> None:
        model, k, t, cond = cell
        self.skipped.append(StudySkip(analysis=self.name, model=model, k=k, temperature=t,
                                      condition=cond, what=what, reason=reason))


def _analyze_study_iv(table: pd.DataFrame | str | Path) -> pd.DataFrame:
    data = read_table(table)
    missing = [c for c in CELL if c not in data.columns]
    if missing:
        raise InputError(MSG_STUDY_COLUMNS.format(cols=", ".join(missing)))
    return data


def _cell(keys: Mapping[str, Any]) -> Cell:
    return (str(keys["model"]), int(keys["k"]), float(keys["temperature"]),
            str(keys["condition"]))


def _sort_key(cell: tuple[Any, ...]) -> tuple[Any, ...]:
    return (str(cell[0]), int(cell[1]), float(cell[2]), str(cell[3]))


def _design_reason(name: str, t: float, conds: set[str], temps: list[float]) -> str | None:
    """Why the grid's design cannot support comparison ``name`` at temperature ``t``."""
    if name == "both_vs_decoding":
        if "decoding" not in conds:
            return REASON_NO_DECODING
        return REASON_DEGENERATE if t == 0 else None
    if name == "both_vs_permutation_only" and 0.0 not in temps:
        return REASON_NO_T0
    return None


def _decision(p: float, alpha: float) -> str:
    return "" if p is None or not math.isfinite(p) else ("reject" if p <= alpha else "retain")


def _num(x: Any) -> float:
    return np.nan if x is None else float(x)


