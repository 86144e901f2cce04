"""Run a joint audit: the MovieLens testbed, one positional run of the LLM recommender
(journaled, resumable), then both studies' statistics on its evaluations."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from .._io import write_text_atomic
from ..audit import RunOptions, RunProgress, parse_audit_config, run_and_analyze
from ..exceptions import InputError
from ..llm import ItemKNNRetriever, movielens_testbed
from ..positional import PositionalAnalysis
from ._config import run_config
from ._options import JointOptions
from ._results import JointAudit
from ._statistics import (
    group_and_popularity,
    lift_by_popularity,
    modal_picks,
    retriever_top1,
    user_attributes,
)

__all__ = ["JOINT_FILE", "run_joint_audit"]

#: The result file in the output folder.
JOINT_FILE = "joint.json"


def run_joint_audit(options: JointOptions, out_dir: str | Path, *,
                    progress: RunProgress | None = None,
                    on_phase: Callable[[str], None] | None = None) -> JointAudit:
    """Audit one LLM recommender for positional and popularity/group bias at once.

    ``out_dir`` receives ``inputs/`` (the catalog and requests written from the data),
    ``run/`` (the positional run: journal, evaluations, ``analysis.json``; resumed when
    it exists) and
    ``joint.json`` (:meth:`JointAudit.to_dict`). Each user's candidates are the ``k``
    best movies by item-kNN over the training interactions; the model picks one in
    ``orders`` random orders (docs/joint-audit.md).

    Parameters
    ----------
    options : JointOptions
    out_dir : str or Path
    progress : RunProgress, optional
        Live counts of the positional run.
    on_phase : callable, optional
        Called with a short phase name before each phase.
    """
    out = Path(out_dir)
    say = on_phase or (lambda _msg: None)
    say("reading the interactions")
    testbed = movielens_testbed(options.data, n_users=options.users, history=options.history,
                                rng=options.seed)
    user_attributes(testbed, options)  # a wrong attribute fails before the model runs
    retriever = ItemKNNRetriever(testbed.train, testbed.history)
    cfg = parse_audit_config(run_config(testbed, options, out / "inputs"), base_dir=out)
    done = run_and_analyze(cfg, out_dir=out / "run", retriever=retriever, progress=progress,
                           on_phase=on_phase,
                           run=RunOptions(resume=(out / "run" / "journal.sqlite").exists()))
    run = done.audit
    if done.analysis is None or not done.analysis.rows:
        why = done.analysis.skipped if done.analysis is not None else None
        raise InputError(f"the positional analysis of the run failed: {why}")
    say("the group, popularity and interaction statistics")
    table = pd.read_parquet(run.evaluations_path)
    candidates = pd.read_parquet(run.run_dir / "candidates.parquet")
    rng = np.random.default_rng(options.seed)
    try:
        lift, reason = lift_by_popularity(table, candidates, testbed, options, rng), None
    except InputError as exc:  # e.g. no long-tail movie among the candidates
        lift, reason = None, str(exc)
    result = JointAudit(
        model=cfg.models[0].name, users=options.users, orders=options.orders, k=options.k,
        positional=PositionalAnalysis.from_dict(done.analysis.rows[0]),
        llm=group_and_popularity(modal_picks(table), testbed, options, rng),
        retriever=group_and_popularity(retriever_top1(candidates), testbed, options, rng),
        lift=lift, lift_reason=reason, run_dir=run.run_dir)
    write_text_atomic(out / JOINT_FILE, json.dumps(result.to_dict(), indent=1, default=str))
    return result
