"""``sequential.json``: the typed evidence of a sequential audit, written and read.

:func:`~recaudit.audit._sequential_driver.drive_sequential` builds a
:class:`SequentialAudit` after every round (the run's :class:`SequentialOptions`, one
:class:`SequentialCell` per cell, its :class:`SequentialEvidence` once a round is done)
and writes its ``to_dict`` to ``RUN_DIR / sequential.json``. ``from_dict`` reads the file
back (strict: a missing key or a value of the wrong kind is an
:class:`~recaudit.InputError` naming the file and the key), and ``to_dict`` of what it
reads is the written object key for key, so ``json.dumps(..., indent=2)`` writes the
same bytes.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

from .._io import to_jsonable
from .._records import (
    as_mapping,
    integer,
    items,
    need,
    number,
    text,
    to_bool,
    to_float,
    to_int,
)
from ..exceptions import ConfigError, InputError
from ..positional import DEFAULT_SEQUENTIAL_METHOD, EXACT_SEQUENTIAL_METHODS, SEQUENTIAL_METHODS
from ._config import AuditConfig

__all__ = ["SequentialAudit", "SequentialCell", "SequentialEvidence", "SequentialOptions",
           "SequentialPb"]

MSG_EXACT_METHOD = (
    "--sequential on choice probabilities (exact mode) has the e-processes {allowed}; "
    "got method = {method!r} (or set answers = \"sampled\")"
)
MSG_NO_PROBS = (
    "--sequential with answers = \"exact\" needs [prompt] choice_probabilities = true "
    "(the run must record the choice-probability vectors)"
)
ANSWERS = ("auto", "sampled", "exact")
#: Fewest queries at which a ``ci_width`` stop may happen: a percentile bootstrap over
#: fewer queries is too often narrow by chance (coverage 0.925-0.933 at W = 0.05 on
#: large effects, stopping at 6-10 queries; 0.943-0.948 with this floor; decision 0421).
MIN_QUERIES_WIDTH = 10


@dataclass(frozen=True)
class SequentialOptions:
    """How a sequential run stops.

    Attributes
    ----------
    alpha : float
        Family-wise level over all cells (each cell gets ``alpha / n_cells``).
    max_evaluations : int
        Budget per cell (evaluations sent, discarded ones included).
    method : str
        The e-process (``recaudit.positional.sequential_uniformity_test``; in exact
        mode one of ``_sequential_exact.EXACT_SEQUENTIAL_METHODS``).
    round_evaluations : int
        Evaluations per cell per round (rounded up to whole query blocks).
    answers : {'auto', 'sampled', 'exact'}
        What the e-process reads: the sampled answers' positions, or the choice-
        probability vectors; ``"auto"`` reads the vectors when the run records them.
    ci_width : float or None
        Stop a cell once the 95 % CI of its PB is at most this wide (``ci_high -
        ci_low``) over at least ``MIN_QUERIES_WIDTH`` queries, whether or not its
        e-process has rejected; ``None``: stop at the
        rejection. The test's verdict at that look stays anytime-valid; the CI's
        coverage after stopping on its width is measured in docs/exact-and-sequential.md.
    """

    alpha: float = 0.05
    max_evaluations: int = 2000
    method: str = DEFAULT_SEQUENTIAL_METHOD
    round_evaluations: int = 20
    answers: str = "auto"
    ci_width: float | None = None

    def __post_init__(self) -> None:
        if not 0.0 < self.alpha < 1.0:
            raise ConfigError(f"`--alpha` must be in (0, 1), got {self.alpha!r}")
        for name in ("max_evaluations", "round_evaluations"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"`{name}` must be an integer >= 1, got {value!r}")
        if self.method not in SEQUENTIAL_METHODS:
            raise ConfigError(f"`method` must be one of {SEQUENTIAL_METHODS}, got {self.method!r}")
        if self.answers not in ANSWERS:
            raise ConfigError(f"`answers` must be one of {ANSWERS}, got {self.answers!r}")
        width = self.ci_width
        if width is not None and (isinstance(width, bool) or not isinstance(width, (int, float))
                                  or not 0.0 < width <= 1.0):
            raise ConfigError(f"`--ci-width` must be in (0, 1] (a CI's width as a fraction, "
                              f"e.g. 0.05), got {width!r}")

    def exact(self, cfg: AuditConfig) -> bool:
        """Whether the cells read choice-probability vectors for this config (raises
        :class:`ConfigError` when exact mode is asked and impossible)."""
        records = bool(cfg.prompt.choice_probabilities)
        if self.answers == "exact" and not records:
            raise ConfigError(MSG_NO_PROBS)
        use = self.answers == "exact" or (self.answers == "auto" and records)
        if use and self.method not in EXACT_SEQUENTIAL_METHODS:
            raise ConfigError(MSG_EXACT_METHOD.format(allowed=", ".join(EXACT_SEQUENTIAL_METHODS),
                                                      method=self.method))
        return use


@dataclass(frozen=True)
class SequentialPb:
    """PB with its 95 % CI at a cell's last look (``--ci-width`` runs; ``nan`` with
    fewer than two queries)."""

    value: float
    ci_low: float
    ci_high: float
    n_queries: int

    def to_dict(self) -> dict[str, Any]:
        """``{"value", "ci_low", "ci_high", "n_queries"}`` (``nan`` as ``null``)."""
        return to_jsonable({f.name: getattr(self, f.name) for f in fields(self)})

    @classmethod
    def from_dict(cls, obj: Any, *, where: str = "sequential pb") -> SequentialPb:
        """Inverse of :meth:`to_dict` (strict)."""
        obj = as_mapping(obj, where)
        return cls(number(obj, "value", where), number(obj, "ci_low", where),
                   number(obj, "ci_high", where), integer(obj, "n_queries", where))


@dataclass(frozen=True)
class SequentialEvidence:
    """A cell's e-process at its last look (the driver's
    :class:`~recaudit.positional.SequentialResult` at the cell's looks).

    Attributes
    ----------
    reject : bool
        E reached the threshold (uniformity rejected).
    stopped_at, valid_evaluations : int
        Valid evaluations at the stop.
    e_value, threshold, pvalue, alpha : float
        E at the stop, the threshold 1/alpha, the anytime-valid p-value, the cell's level.
    method, answers : str
        The e-process; ``"sampled"`` (positions) or ``"exact"`` (choice vectors).
    checkpoints, evaluations_at_checkpoints : tuple of int
        The looks (valid evaluations) and the evaluations sent up to each.
    log_e_path : tuple of float
        log E at each look.
    counts : tuple of float
        Selections per position (whole numbers with ``answers = "sampled"``; exact mode:
        the expected counts).
    cs_low, cs_high : tuple of float
        Confidence sequences per position at the stop.
    evaluations_used : int
        Evaluations sent (discarded ones included).
    pb : SequentialPb or None
        PB at the last look (``--ci-width`` runs only).
    ci_width_reached : bool or None
        Whether PB's CI was narrow enough (``--ci-width`` runs only).
    """

    reject: bool
    stopped_at: int
    e_value: float
    threshold: float
    pvalue: float
    alpha: float
    method: str
    checkpoints: tuple[int, ...]
    log_e_path: tuple[float, ...]
    counts: tuple[float, ...]
    cs_low: tuple[float, ...]
    cs_high: tuple[float, ...]
    answers: str
    evaluations_at_checkpoints: tuple[int, ...]
    valid_evaluations: int
    evaluations_used: int
    pb: SequentialPb | None = None
    ci_width_reached: bool | None = None

    def to_dict(self) -> dict[str, Any]:
        """The evidence keys of a cell of ``sequential.json`` (``pb`` and
        ``ci_width_reached`` only in ``--ci-width`` runs)."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["pb"] = None if self.pb is None else self.pb.to_dict()
        return to_jsonable({k: v for k, v in out.items()
                            if v is not None or k not in ("pb", "ci_width_reached")})

    @classmethod
    def from_dict(cls, obj: Any, *, where: str = "sequential evidence") -> SequentialEvidence:
        """Inverse of :meth:`to_dict` (strict; a missing or wrong key named)."""
        obj = as_mapping(obj, where)
        answers = text(obj, "answers", where)
        pb = obj.get("pb")
        width = obj.get("ci_width_reached")
        return cls(
            reject=to_bool(need(obj, "reject", where), "reject", where),
            stopped_at=integer(obj, "stopped_at", where),
            e_value=number(obj, "e_value", where),
            threshold=number(obj, "threshold", where),
            pvalue=number(obj, "pvalue", where),
            alpha=number(obj, "alpha", where),
            method=text(obj, "method", where),
            checkpoints=items(obj, "checkpoints", where, to_int),
            log_e_path=items(obj, "log_e_path", where, to_float),
            counts=items(obj, "counts", where, to_int if answers == "sampled" else to_float),
            cs_low=items(obj, "cs_low", where, to_float),
            cs_high=items(obj, "cs_high", where, to_float),
            answers=answers,
            evaluations_at_checkpoints=items(obj, "evaluations_at_checkpoints", where, to_int),
            valid_evaluations=integer(obj, "valid_evaluations", where),
            evaluations_used=integer(obj, "evaluations_used", where),
            pb=None if pb is None else SequentialPb.from_dict(pb, where=f"{where}, pb"),
            ci_width_reached=None if width is None
            else to_bool(width, "ci_width_reached", where),
        )


#: The keys of a cell's evidence: a cell with none of them has not finished a round.
_EVIDENCE_KEYS = frozenset(f.name for f in fields(SequentialEvidence))


@dataclass(frozen=True)
class SequentialCell:
    """One (model, k, temperature, condition) cell of a sequential audit.

    ``decision`` is ``"running"``, ``"rejected"``, ``"ci_width_reached"``,
    ``"budget_spent"`` or ``"plan_exhausted"``; ``planned_evaluations`` what the plan
    holds for the cell, ``budget`` what it may use; ``evidence`` is None before the
    cell's first round completes.
    """

    model: str
    k: int
    temperature: float
    condition: str
    decision: str
    planned_evaluations: int
    budget: int
    evidence: SequentialEvidence | None = None

    def to_dict(self) -> dict[str, Any]:
        """The cell's object in ``sequential.json`` (the evidence's keys inline)."""
        head = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "evidence"}
        return {**head, **({} if self.evidence is None else self.evidence.to_dict())}

    @classmethod
    def from_dict(cls, obj: Any, *, where: str = "sequential cell") -> SequentialCell:
        """Inverse of :meth:`to_dict` (strict; a missing or wrong key named)."""
        obj = as_mapping(obj, where)
        has_evidence = any(key in _EVIDENCE_KEYS for key in obj)
        return cls(
            model=text(obj, "model", where),
            k=integer(obj, "k", where),
            temperature=number(obj, "temperature", where),
            condition=text(obj, "condition", where),
            decision=text(obj, "decision", where),
            planned_evaluations=integer(obj, "planned_evaluations", where),
            budget=integer(obj, "budget", where),
            evidence=SequentialEvidence.from_dict(obj, where=where) if has_evidence else None,
        )


def _options(obj: Any, where: str) -> SequentialOptions:
    """The run's :class:`SequentialOptions` (``asdict`` of them) read back strictly."""
    obj = as_mapping(obj, where)
    width = need(obj, "ci_width", where)
    try:
        return SequentialOptions(
            alpha=number(obj, "alpha", where),
            max_evaluations=integer(obj, "max_evaluations", where),
            method=text(obj, "method", where),
            round_evaluations=integer(obj, "round_evaluations", where),
            answers=text(obj, "answers", where),
            ci_width=None if width is None else to_float(width, "ci_width", where),
        )
    except ConfigError as exc:
        raise InputError(f"{where}: {exc}") from None


@dataclass(frozen=True)
class SequentialAudit:
    """``sequential.json``: the run's options, the per-cell level (Bonferroni:
    ``alpha / n_cells``), the seed, and every :class:`SequentialCell`."""

    options: SequentialOptions
    alpha_per_cell: float
    n_cells: int
    seed: int
    cells: tuple[SequentialCell, ...]

    def to_dict(self) -> dict[str, Any]:
        """The object the driver writes to ``sequential.json``."""
        return {"options": asdict(self.options), "alpha_per_cell": self.alpha_per_cell,
                "n_cells": self.n_cells, "seed": self.seed,
                "cells": [c.to_dict() for c in self.cells]}

    @classmethod
    def from_dict(cls, obj: Any, *, where: str = "sequential.json") -> SequentialAudit:
        """Inverse of :meth:`to_dict`; ``where`` names the file in every error."""
        obj = as_mapping(obj, where)
        return cls(
            options=_options(need(obj, "options", where), f"{where}, options"),
            alpha_per_cell=number(obj, "alpha_per_cell", where),
            n_cells=integer(obj, "n_cells", where),
            seed=integer(obj, "seed", where),
            cells=tuple(SequentialCell.from_dict(c, where=f"{where}, cells[{i}]")
                        for i, c in enumerate(items(obj, "cells", where))),
        )
