"""recaudit.joint: one audit of an LLM recommender for both biases.

On interaction data with a protected attribute (MovieLens in RecBole's atomic format),
one positional run of the LLM recommender -- each user's liked history as the request,
item-kNN candidates shown in several random orders -- answers both studies' questions
and the one neither answers alone:

1. its positional bias (:mod:`recaudit.positional`);
2. the group and popularity bias of what it recommends, beside its retriever's top-1
   (:mod:`recaudit.fairness` at N = 1);
3. whether the position effect is stronger for long-tail items than for popular ones
   (:func:`recaudit.positional.position_lift_by_class`).

:func:`run_joint_audit` runs it (``recaudit joint`` on the command line) and
:func:`joint_summary` says it in plain words; docs/joint-audit.md is the worked example.
"""

from ._options import JointOptions
from ._results import JointAudit
from ._run import JOINT_FILE, run_joint_audit
from ._summary import joint_summary

__all__ = ["JOINT_FILE", "JointAudit", "JointOptions", "joint_summary", "run_joint_audit"]
