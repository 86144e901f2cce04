"""The result of a joint audit, with its JSON (``joint.json``) both ways."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._records import as_mapping, integer, need
from ..exceptions import InputError
from ..fairness import FairnessEvaluation
from ..positional import ClassPositionLift, PositionalAnalysis

__all__ = ["JointAudit"]


@dataclass(frozen=True)
class JointAudit:
    """Both biases of one LLM recommender, from one run.

    Attributes
    ----------
    model : str
        The model audited.
    users, orders, k : int
        Requests, candidate orders per request, candidates per prompt.
    positional : PositionalAnalysis
        Its positional bias (PB, sPB, POB-ICM, POB-UNBP, the shares by position).
    llm : FairnessEvaluation
        The group and popularity bias of its order-free answer (each user's most
        frequent pick) at N = 1.
    retriever : FairnessEvaluation
        The same for the retriever's own top-1: the candidate generator's share of the
        bias, to read the LLM's apart from it.
    lift : ClassPositionLift or None
        Position-1 lift of head and long-tail candidates and tail - head; ``None`` with
        ``lift_reason`` when not estimable (e.g. no long-tail candidate was shown).
    lift_reason : str or None
    run_dir : Path
        The positional run folder (journal, evaluations, report).
    """

    model: str
    users: int
    orders: int
    k: int
    positional: PositionalAnalysis
    llm: FairnessEvaluation
    retriever: FairnessEvaluation
    lift: ClassPositionLift | None
    lift_reason: str | None
    run_dir: Path

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready; the shape of ``joint.json``."""
        lift = self.lift.to_dict() if self.lift is not None else {"reason": self.lift_reason}
        return {"model": self.model, "users": self.users, "orders": self.orders, "k": self.k,
                "run_dir": str(self.run_dir), "positional": self.positional.to_dict(),
                "llm": self.llm.to_dict(), "retriever": self.retriever.to_dict(),
                "position_lift_by_class": lift}

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> JointAudit:
        """Read :meth:`to_dict`'s JSON back; a missing key raises ``InputError``."""
        what = "joint audit"
        obj = as_mapping(obj, what)
        lift_obj = as_mapping(need(obj, "position_lift_by_class", what),
                              f"{what}.position_lift_by_class")
        reason = lift_obj.get("reason")
        if reason is not None and not isinstance(reason, str):
            raise InputError(f"{what}.position_lift_by_class.reason must be a string")
        return cls(
            model=str(need(obj, "model", what)),
            users=integer(obj, "users", what), orders=integer(obj, "orders", what),
            k=integer(obj, "k", what),
            positional=PositionalAnalysis.from_dict(need(obj, "positional", what)),
            llm=FairnessEvaluation.from_dict(need(obj, "llm", what)),
            retriever=FairnessEvaluation.from_dict(need(obj, "retriever", what)),
            lift=None if reason is not None else ClassPositionLift.from_dict(lift_obj),
            lift_reason=reason,
            run_dir=Path(str(need(obj, "run_dir", what))),
        )
