"""Run an audit, then analyse it: the one place the audit hands its table to the
statistics.

:func:`run_and_analyze` is what ``positional run`` (``--analyze``), ``positional demo``
and ``positional study`` call; :func:`analyze_run` is its grouped analysis (also the
analysis of a mitigation folder's combined table, :func:`recaudit.audit.mitigate`).
The analysis settings reach :func:`recaudit.positional.analyze_groups` and
:func:`recaudit.positional.analyze_study_folder` here and nowhere else.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .._io import to_jsonable, write_text_atomic
from .._read import read_json
from ..exceptions import RecauditError, RecauditWarning
from ..llm import CandidateSource
from ..positional import (
    AnalysisOptions,
    PositionalStudyResult,
    analyze_groups,
    analyze_study_folder,
    compare_cells,
    has_rankings,
    read_table,
    topn_groups,
)
from ._config import AuditConfig
from ._run import AuditResult, WrapBackends, run_audit
from ._run_options import RunOptions
from ._runner import RunProgress
from ._sequential_driver import SEQUENTIAL_FILE

__all__ = [
    "ANALYSIS_JSON",
    "COMPARE_JSON",
    "TOPN_JSON",
    "GROUP_BY",
    "AnalysedRun",
    "RunAnalysis",
    "analyze_run",
    "run_and_analyze",
]

#: The columns a run is analysed by (one group per cell, Holm across them).
GROUP_BY = ("model", "k", "temperature", "condition")
#: The grouped analysis, written beside the evaluations for ``recaudit report RUN_DIR``.
ANALYSIS_JSON = "analysis.json"
#: A ranking run's ranked-list statistics per cell (``[prompt] answer = "ranking"``).
TOPN_JSON = "topn.json"
#: A multi-model run's paired model comparisons per cell.
COMPARE_JSON = "compare.json"
MSG_EXTRA = "{name} was not written: {error}"
MSG_SKIPPED = "{error}; inspect the table and run `recaudit positional analyze {path}`"

Analysis = Literal["groups", "study", "none"]


@dataclass(frozen=True)
class RunAnalysis:
    """The grouped analysis of a run's table, or why it could not be computed.

    Attributes
    ----------
    rows : list of dict or None
        :meth:`recaudit.positional.GroupedAnalysis.to_list` (written to
        ``analysis.json``); ``None`` when the table could not be analysed.
    skipped : str or None
        Why not (the error and the command to retry): the evaluations are safe on
        disk, so an unusable table (e.g. every answer discarded) is not a failed run.
    topn : list of dict or None
        A ranking run's ranked-list statistics per cell
        (:meth:`recaudit.positional.TopNGroups.to_list`, written to ``topn.json``).
    comparisons : list of dict or None
        A run with several models: every pair compared within each cell, Holm across
        the run (:meth:`recaudit.positional.RunComparisons.to_list`, ``compare.json``).
    """

    rows: list[dict[str, Any]] | None
    skipped: str | None = None
    topn: list[dict[str, Any]] | None = None
    comparisons: list[dict[str, Any]] | None = None


def analyze_run(evaluations: str | os.PathLike[str], options: AnalysisOptions | None = None,
                *, seed: int) -> RunAnalysis:
    """Analyse a finished run's table by :data:`GROUP_BY` (Holm across the groups) and
    write ``analysis.json`` beside it (whole, then renamed); a ranking run's table also
    gets its ranked-list statistics per cell, ``topn.json``, and a run with several
    models its paired model comparisons per cell, ``compare.json``.

    Parameters
    ----------
    evaluations : path-like
        ``RUN_DIR/evaluations.parquet``.
    options : AnalysisOptions, optional
        The analysis (:func:`recaudit.positional.analyze_groups`; default: its defaults).
    seed : int
        The analysis seed (the config's ``seed``).
    """
    path = Path(evaluations)
    settings = AnalysisOptions() if options is None else options
    try:
        table = read_table(path)
        grouped = analyze_groups(table, settings, by=list(GROUP_BY), rng=seed)
    except RecauditError as exc:
        return RunAnalysis(None, MSG_SKIPPED.format(error=exc, path=path))
    rows = grouped.to_list()
    _write(path.parent / ANALYSIS_JSON, rows)
    # the ranked-list statistics and the model comparisons add to the analysis: one that
    # cannot be computed is a warning, never the loss of analysis.json
    topn = _extra(lambda: topn_groups(table, settings, by=list(GROUP_BY), rng=seed).to_list(),
                  path.parent / TOPN_JSON) if has_rankings(table) else None
    comparisons = _extra(lambda: compare_cells(
        table, by="model", within=GROUP_BY[1:], n_boot=settings.n_boot,
        confidence_level=settings.confidence_level, rng=seed).to_list(),
        path.parent / COMPARE_JSON) if table["model"].nunique() > 1 else None
    return RunAnalysis(rows, topn=topn, comparisons=comparisons)


def _extra(compute: Callable[[], list[dict[str, Any]]], path: Path
           ) -> list[dict[str, Any]] | None:
    """``compute()`` written to ``path``, or ``None`` with a warning naming why."""
    try:
        return _write(path, compute())
    except RecauditError as exc:
        path.unlink(missing_ok=True)  # never a stale file from an earlier analysis
        warnings.warn(MSG_EXTRA.format(name=path.name, error=exc), RecauditWarning,
                      stacklevel=3)
        return None


def _write(path: Path, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``rows`` as strict JSON at ``path`` (whole, then renamed); returns them."""
    write_text_atomic(path, json.dumps(to_jsonable(rows), indent=2, allow_nan=False))
    return rows


@dataclass(frozen=True)
class AnalysedRun:
    """What :func:`run_and_analyze` did.

    Attributes
    ----------
    audit : AuditResult
        The run.
    analysis : RunAnalysis or None
        The grouped analysis (``analysis="groups"``).
    study : PositionalStudyResult or None
        The study's analyses (``analysis="study"``).
    paths : dict of str to Path
        The files the study analysis wrote.
    sequential : dict or None
        ``sequential.json`` of a sequential run (decision and evidence per cell).
    """

    audit: AuditResult
    analysis: RunAnalysis | None = None
    study: PositionalStudyResult | None = None
    paths: dict[str, Path] = field(default_factory=dict)
    sequential: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON summary: the run, the analysis rows, the sequential evidence."""
        doc: dict[str, Any] = {"run": self.audit.to_dict(),
                               "analysis": None if self.analysis is None
                               else self.analysis.rows}
        if self.analysis is not None and self.analysis.topn is not None:
            doc["topn"] = self.analysis.topn
        if self.analysis is not None and self.analysis.comparisons is not None:
            doc["comparisons"] = self.analysis.comparisons
        if self.sequential is not None:
            doc["sequential"] = self.sequential
        return doc


def run_and_analyze(
    cfg: AuditConfig,
    *,
    out_dir: str | os.PathLike[str],
    run: RunOptions | None = None,
    analysis: Analysis = "groups",
    progress: RunProgress | None = None,
    on_phase: Callable[[str], None] | None = None,
    retriever: CandidateSource | None = None,
    wrap_backends: WrapBackends | None = None,
    options: AnalysisOptions | None = None,
    seed: int | None = None,
) -> AnalysedRun:
    """Run (or resume) the audit of ``cfg`` with :func:`run_audit`, then analyse it.

    Parameters
    ----------
    cfg : AuditConfig
        The audit.
    out_dir : path-like
        The run folder.
    analysis : {"groups", "study", "none"}
        ``groups``: :func:`analyze_run` (``analysis.json``); ``study``:
        :func:`recaudit.positional.analyze_study_folder` (``study.parquet``,
        ``study.csv``, ``study.json``, ``analysis.json``); ``none``: run only.
    run : RunOptions, optional
        How to run it (resume, executor, Ray address, sequential stopping).
    progress, on_phase, retriever, wrap_backends
        Passed to :func:`run_audit`; ``on_phase`` also hears the analysis steps.
    options : AnalysisOptions, optional
        The analysis options of either analysis (default: their defaults).
    seed : int, optional
        Analysis seed (default: the config's ``seed``).
    """
    say = on_phase or (lambda _m: None)
    audit = run_audit(cfg, out_dir=out_dir, run=run, progress=progress, retriever=retriever,
                      on_phase=on_phase, wrap_backends=wrap_backends)
    doc = None
    if run is not None and run.sequential is not None:
        doc = read_json(audit.run_dir / SEQUENTIAL_FILE, what="the sequential evidence")
    rng = cfg.seed if seed is None else seed
    if analysis == "study":
        study = analyze_study_folder(audit.run_dir, options, rng=rng, progress=on_phase)
        return AnalysedRun(audit, study=study, paths=study.save(audit.run_dir),
                           sequential=doc)
    if analysis == "groups":
        say("analysing (POB-ICM, POB-UNBP, PS, PB, sPB)")
        return AnalysedRun(audit, analysis=analyze_run(audit.evaluations_path, options,
                                                       seed=rng),
                           sequential=doc)
    return AnalysedRun(audit, sequential=doc)
