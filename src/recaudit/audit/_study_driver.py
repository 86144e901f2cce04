"""``recaudit positional study``: run the grid through the runner, then analyse it.

The run is :func:`~recaudit.audit.run_audit` itself (same journal, same keys), so a
folder made by ``recaudit positional run CONFIG`` with the same config is resumed
(nothing is redone) and analysed. The analysis is
:func:`recaudit.positional.analyze_study_folder` (through
:func:`~recaudit.audit.run_and_analyze`): it only reads files, so a finished folder can
be re-analysed without the LLM stack.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..llm import CandidateSource
from ..positional import AnalysisOptions, PositionalStudyResult
from ._analysis import run_and_analyze
from ._config import AuditConfig
from ._run import AuditResult
from ._run_options import RunOptions
from ._runner import RunProgress

__all__ = ["StudyRun", "run_positional_study"]


@dataclass(frozen=True)
class StudyRun:
    """What :func:`run_positional_study` did: the run, the analyses and the files written."""

    audit: AuditResult
    study: PositionalStudyResult
    paths: dict[str, Path]

    def to_dict(self) -> dict[str, Any]:
        """JSON summary: the run, the files, the skipped analyses and the settings."""
        study = self.study.to_dict()
        return {
            "run": self.audit.to_dict(),
            "files": {k: str(v) for k, v in self.paths.items()},
            "settings": study["settings"],
            "skipped": study["skipped"],
        }


def run_positional_study(
    cfg: AuditConfig,
    *,
    out_dir: str | os.PathLike[str],
    resume: bool = False,
    options: AnalysisOptions | None = None,
    seed: int | None = None,
    progress: RunProgress | None = None,
    on_phase: Callable[[str], None] | None = None,
    retriever: CandidateSource | None = None,
) -> StudyRun:
    """Run (or resume) the study grid of ``cfg``, analyse every cell, write the tables.

    Parameters
    ----------
    cfg : AuditConfig
        The study config: ``retrieval.k``, ``temperatures`` and ``conditions`` are the
        grid (``permutation`` at T > 0 is the paper's "both", ``labels_permutation``
        its "permutation+labels").
    out_dir : path-like
        The run folder; ``study.parquet``, ``study.csv``, ``study.json`` and
        ``analysis.json`` are written beside ``evaluations.parquet``.
    resume : bool
        Continue the run in ``out_dir`` (see :func:`run_audit`).
    options : AnalysisOptions, optional
        Levels, bootstrap resamples, POB-ICM shuffles, sPB's threshold rule and fold
        assignments of every cell's analysis (default: their defaults).
    seed : int, optional
        Seed of the analysis (default: the config's ``seed``).
    progress, on_phase, retriever
        Passed to :func:`run_audit`; ``on_phase`` also hears the analysis steps.
    """
    done = run_and_analyze(cfg, out_dir=out_dir, analysis="study",
                           run=RunOptions(resume=resume),
                           progress=progress, on_phase=on_phase, retriever=retriever,
                           options=options, seed=seed)
    assert done.study is not None  # analysis="study"
    return StudyRun(audit=done.audit, study=done.study, paths=done.paths)
